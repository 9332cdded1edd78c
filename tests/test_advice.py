"""The step breakdown's arithmetic and each recommendation's trigger, on hand-made figures."""

import pytest

from nnprofile.analysis import advice, breakdown
from nnprofile.analysis import analyze_section
from nnprofile.result import Entry, Section
from nnprofile.result.header import ProjectHeader
from nnprofile.render import step as step_words
from nnprofile.render.advice import words


def summarize_section(section, context="cpu:float", rates=None):
    """The step of one section, as the analysis computes it once for every renderer."""
    return analyze_section(section, ProjectHeader(context=context, machine_rates=rates or {})).step


def _e(phase, ms, layer=None, ltype=None, flops=None, dtype=None, moved=0):
    label = phase if layer is None else "%s (%s : %s)" % (phase, layer, ltype)
    return Entry(
        label=label,
        phase=phase,
        samples_ns=[ms * 1e6],
        layer=layer,
        layer_type=ltype,
        flops=flops,
        dtype=dtype,
        bytes_read=moved,
        bytes_written=0,
    )


def _section(**ms):
    """A training section with whole-step entries of the given times (ms)."""
    entries = [
        _e("load_dataset", ms.get("load", 1.0)),
        _e("let_data", ms.get("let", 1.0)),
        _e("forward_function", ms.get("conv_f", 6.0), "Conv", "Convolution", flops=60_000_000, dtype="float32"),
        _e("forward_function", ms.get("relu_f", 2.0), "ReLU", "ReLU", flops=100_000, dtype="float32"),
        _e("prepare_backward", ms.get("prep", 0.5)),
        _e("backward_function", ms.get("relu_b", 1.0), "ReLU", "ReLU", flops=100_000, dtype="float32"),
        _e("backward_function", ms.get("conv_b", 10.0), "Conv", "Convolution", flops=120_000_000, dtype="float32"),
        _e("forward_all", ms.get("fwd", 8.0)),
        _e("backward_all", ms.get("bwd", 11.0)),
        _e("backward_all_wo_zero_grad", 11.0),
        _e("weight_decay", ms.get("wd", 0.5)),
        _e("update", ms.get("update", 1.0)),
        _e("monitor_loss", ms.get("monitor", 0.5)),
    ]
    return Section(kind="optimizer", name="Optimizer", network="Main", entries=entries, complete=True)


def test_breakdown_arithmetic():
    s = summarize_section(_section())
    # prepare_backward (zeroing the gradients) is the solver's, as a program's solver.zero_grad()
    assert s.parts == [
        ("input", 2.0),
        ("forward", 8.0),
        ("backward", 11.0),
        ("update", 2.0),
        ("monitor", 0.5),
        ("other", 0.0),
    ]
    assert s.step_ms == 23.5  # backward_all(wo param zero_grad) is an alternative, not a part
    assert s.share("forward") == pytest.approx(8 / 23.5)
    assert sum(s.share(p) for p in breakdown.PARTS) == pytest.approx(1.0)
    assert [l.layer for l in s.top_layers] == ["Conv", "ReLU"]
    assert s.top_layers[0].total_ms == 16.0
    assert (s.half_functions, s.functions) == (0, 2)
    assert s.coverage == pytest.approx(8 / 8)


def test_only_complete_training_sections_are_summarized():
    section = _section()
    section.complete = False
    assert summarize_section(section) is None
    section = _section()
    section.kind = "executor"
    assert summarize_section(section) is None


def test_half_precision_share():
    section = _section()
    section.entries[2].dtype = "float16"
    assert summarize_section(section, "cudnn:half").half_functions == 1


def _rules(section, context="cpu:float"):
    return [a.rule for a in summarize_section(section, context).advice]


def test_input_bound_fires_above_a_fifth_of_the_step():
    assert "input_bound" not in _rules(_section())
    # input 8 of 29.5 ms: 27%
    assert "input_bound" in _rules(_section(load=7.0))
    a = words([a for a in summarize_section(_section(load=7.0)).advice if a.rule == "input_bound"][0])
    assert "8.000 ms" in a.evidence and "27.1%" in a.evidence


def test_no_half_precision_fires_on_gpu_backends_only():
    assert "no_half_precision" in _rules(_section(), "cudnn:float")
    assert "no_half_precision" in _rules(_section(), "cuda:float")
    assert "no_half_precision" not in _rules(_section(), "cpu:float")
    half = _section()
    for e in half.entries:
        if e.phase == "forward_function":
            e.dtype = "float16"
    assert "no_half_precision" not in _rules(half, "cudnn:half")


def test_dominant_layer_threshold_both_sides():
    big = summarize_section(_section(conv_f=6.0, conv_b=10.0))  # 16 / 23.5 = 68%
    small = summarize_section(_section(conv_f=2.0, conv_b=3.0))  # 5 / 23.5 = 21%
    assert [a.rule for a in big.advice].count("dominant_layer") == 1
    assert "Conv" in words([a for a in big.advice if a.rule == "dominant_layer"][0]).evidence
    assert "dominant_layer" not in [a.rule for a in small.advice]


CONV_WORDS = ("maps", "kernel", "stride", "pooling")


@pytest.mark.parametrize(
    "ltype, kind, says",
    [
        ("Convolution", "convolution", "kernel"),
        ("DepthwiseDeconvolution", "convolution", "kernel"),
        ("Mul2", "element-wise", "element-wise"),
        ("AddScalar", "element-wise", "element-wise"),
        ("ReLU", "element-wise", "element-wise"),
        ("Sum", "reduction", "reduces"),
        ("Embed", "embedding", "table"),
        ("LSTM", "recurrent", "time step"),
        ("Affine", "affine", "units"),
        ("BinaryConnectAffine", "affine", "units"),
        ("BatchNormalization", "normalization", "fuse"),
        ("SoftmaxCrossEntropy", "loss", "classes"),
        ("Transpose", "data movement", "copy"),
        ("SomethingNew", "other", "layer table"),
    ],
)
def test_the_dominant_layers_advice_fits_what_the_layer_does(ltype, kind, says):
    from nnprofile.base.kinds import layer_kind

    assert layer_kind(ltype) == kind
    section = _section(conv_f=6.0, conv_b=10.0)
    for e in section.entries:
        if e.layer == "Conv":
            e.layer_type, e.layer = ltype, "heavy"
    [a] = [words(a) for a in summarize_section(section).advice if a.rule == "dominant_layer"]
    assert says in a.text and "heavy" in a.text and ltype in a.evidence
    # maps, kernels, strides and pooling are for convolutions only
    assert any(w in a.text for w in CONV_WORDS) == (kind == "convolution"), a.text


def _slow(section, rates=None):
    return [words(a) for a in summarize_section(section, rates=rates).advice if a.rule == "slow_layer"]


def test_a_convolution_is_judged_by_flops_against_the_machines_matrix_product():
    # Conv: 180 MFLOP in 16 ms = 11.25 GFLOP/s: within a tenth of a 100 GFLOP/s machine, below a tenth of 200.
    assert not _slow(_section(), {"gflops": 100.0, "gbytes_per_s": 20.0})
    [slow] = _slow(_section(), {"gflops": 200.0, "gbytes_per_s": 20.0})
    assert slow.evidence.startswith("Conv (Convolution) achieves 11.250 GFLOP/s [11.250, 11.250] over 16.000 ms")
    assert "this machine reaches 200.0 GFLOP/s (measured)" in slow.evidence and "computes far below" in slow.text


def test_an_elementwise_layer_is_judged_by_the_bytes_it_moves_never_by_flops():
    # ReLU: 0.067 GFLOP/s (far below the Conv) is no reason; 6 MB in 3 ms = 2 GB/s is judged against bandwidth.
    section = _section()
    for e in section.entries:
        if e.layer == "ReLU":
            e.bytes_read = 3_000_000
    assert not _slow(section, {"gflops": 10.0, "gbytes_per_s": 15.0})  # 2 GB/s: above a tenth of 15
    [slow] = _slow(section, {"gflops": 10.0, "gbytes_per_s": 40.0})  # below a tenth of 40
    assert slow.evidence.startswith("ReLU (ReLU) achieves 2.000 GB/s") and "memory" in slow.text
    assert "GFLOP/s" not in slow.evidence


def test_without_the_machines_figures_a_layer_is_judged_against_its_own_kind():
    # An older result: no machine rates; the ReLU has no peer of its kind, the Conv no other convolution.
    assert not _slow(_section())


def test_a_rate_above_what_the_machine_reaches_is_flagged_and_no_reference():
    # A 0.001 ms convolution "at" 180 TFLOP/s: its time is too short to rate; it is said, and never advised on.
    s = summarize_section(_section(conv_f=0.0005, conv_b=0.0005), rates={"gflops": 100.0, "gbytes_per_s": 20.0})
    [note] = [step_words.note(n) for n in s.notes if "above what this machine reaches" in step_words.note(n)]
    assert note.startswith("Conv (Convolution) reads") and "too short to rate" in note
    assert not [a for a in s.advice if a.rule == "slow_layer"]


def test_between_layers_fires_when_layers_cover_little_of_forward_all():
    assert "between_layers" not in _rules(_section())
    assert "between_layers" in _rules(_section(fwd=12.0))  # layers 8 of 12 ms: 66.7%


def test_heavy_update_fires_above_a_fifth():
    assert "heavy_update" not in _rules(_section())
    assert "heavy_update" in _rules(_section(update=9.0))


def test_every_rule_is_registered():
    assert {r.__name__ for r in advice.RULES} == {
        "input_bound",
        "no_half_on_gpu",
        "dominant_layer",
        "slow_layer",
        "between_layers",
        "heavy_update",
        "costly_checkpoint",
        "costly_evaluation",
        "own_python",
    }


def _program(validation_ms, trained=False):
    """A recorded program's step: a training graph, and a graph run forward every other step."""
    graphs = [
        breakdown.GraphTime("loss", True, 1, 1, 4.0, 5.0, 4.0),
        breakdown.GraphTime("vpred", trained, 0.5, 0, validation_ms, 0.0, 2 * validation_ms),
    ]
    parts = [("forward (loss)", 4.0), ("backward (loss)", 5.0), ("forward (vpred)", validation_ms), ("other", 1.0)]
    return breakdown.Summary(
        section="script 'p.py'",
        parts=parts,
        half_functions=0,
        functions=0,
        layers=[],
        coverage=None,
        backend="cpu",
        type_config="float",
        advice=[],
        graphs=graphs,
    )


def test_costly_evaluation_fires_for_a_forward_only_graph_over_a_tenth_of_the_step():
    assert advice.costly_evaluation(_program(0.5)) == []  # 0.5 of 10.5 ms: under a tenth
    [said] = map(words, advice.costly_evaluation(_program(2.0)))  # 2 of 12 ms
    assert said.rule == "costly_evaluation" and "'vpred'" in said.text and "16.7%" in said.text
    assert "0.50 forward passes of 'vpred' per step, 4.000 ms each" in said.evidence
    assert advice.costly_evaluation(_program(2.0, trained=True)) == []


def test_costly_checkpoint_fires_above_a_tenth_of_the_step():
    def program(checkpoint_ms):
        s = _program(0.0, trained=True)
        s.parts = [("forward (loss)", 4.0), ("backward (loss)", 5.0), ("checkpoint", checkpoint_ms), ("other", 1.0)]
        return s

    assert advice.costly_checkpoint(program(0.5)) == []  # 0.5 of 10.5 ms: under a tenth
    [said] = map(words, advice.costly_checkpoint(program(2.0)))  # 2 of 12 ms
    assert said.rule == "costly_checkpoint" and "save it less often" in said.text and "16.7%" in said.evidence


def test_a_shares_interval_stays_within_the_step():
    from nnprofile.analysis import evidence

    assert evidence.share_interval(6.0, 4.0, 10.0, 0.5) == (0.0, 1.0)  # 0.6 +- 131 %: none to all of the step
    low, high = evidence.share_interval(6.0, 0.3, 10.0, 0.5)
    assert 0.0 < low < 0.6 < high < 1.0
    low, high = evidence.share_interval(11.0, 0.3, 10.0, 0.1)  # parts that came to more than the step
    assert low < high == pytest.approx(1.1)  # (no more than the share itself)


def test_a_programs_parts_have_kinds():
    s = _program(2.0)
    assert s.kind_ms("forward") == 6.0 and s.share("backward") == pytest.approx(5.0 / 12)


def test_summary_rows_and_lines_agree():
    s = summarize_section(_section())
    rows = step_words.summary_rows(s)
    assert rows[0][1:4] == ["step", "training step", 23.5]
    assert [r[2] for r in rows if r[1] == "part"] == list(breakdown.PARTS)
    lines = step_words.summary_lines(s)
    assert lines[0].startswith("Step: 23.500 ms = input 2.000 ms (8.5%)")
    assert sum(1 for l in lines if l.startswith("Advice:")) == len(s.advice)


def test_the_first_advice_is_about_the_most_of_the_step():
    """Advice is ordered by the share of the step it is about, not by the rules' order: an update of 10 of 31.5 ms
    (heavy_update, a late rule) comes after the convolution's 16 ms, and first once it outweighs it (31 of 52.5)."""
    rates = {"gflops": 200.0, "gbytes_per_s": 20.0}
    s = summarize_section(_section(update=9.0), rates=rates)
    shares = [advice.stake(s, a) for a in s.advice]
    assert [a.rule for a in s.advice][-1] == "heavy_update" and shares == sorted(shares, reverse=True)
    assert shares[0] == pytest.approx(16 / 31.5)
    s = summarize_section(_section(update=30.0), rates=rates)
    assert [a.rule for a in s.advice] == ["heavy_update", "slow_layer"]
    assert advice.stake(s, s.advice[0]) == pytest.approx(31 / 52.5)


def test_a_busy_machine_makes_the_input_uncertain_and_no_advice_stands_on_it():
    """The program's reads wait for its data iterator's threads, whose waits for a CPU are not measured: where other
    work took a share of the program's own thread, the input is said to be uncertain, and not advised on."""
    from nnprofile.analysis import facts
    from nnprofile.result import Interference

    def program(waited_ms):
        script = Section(
            kind="script",
            name="p.py",
            network="",
            complete=True,
            entries=[
                Entry(label="load_dataset (it)", phase="load_dataset", samples_ns=[3e6] * 20),
                Entry(label="step", phase="step", samples_ns=[6e6] * 20),
            ],
        )
        script.interference = Interference(True, 120e6, waited_ms * 1e6, 10, 0, 40)
        return breakdown.summarize_program(script, [])

    quiet, busy = program(0.5), program(24.0)  # 0.4% and 20% of the program's thread
    assert [a.rule for a in advice.input_bound(quiet)] == ["input_bound"]
    assert advice.input_bound(busy) == []
    [held] = [n for n in busy.notes if isinstance(n, facts.InputHeldUp)]
    assert held.busy == pytest.approx(0.2) and held.input_ms == pytest.approx(busy.kind_ms("input"))
    assert "may read higher than the program runs alone" in step_words.note(held)
    assert not [n for n in quiet.notes if isinstance(n, facts.InputHeldUp)]


def test_no_line_is_named_for_time_the_step_does_not_leave():
    from nnprofile.analysis.ownlines import OwnLine

    s = _program(0.0)
    s.parts = [("forward (loss)", 4.0), ("backward (loss)", 5.0), ("other", 0.0)]
    s.own_lines = [OwnLine("p.py:44", "main", "x.d = rng.rand(*x.shape)", 6, 0.75, 0.0, 0.4, 0.95)]
    s.own_samples = 8
    line = step_words.other_line(s)
    assert line.startswith("Other: 0.000 ms a step: the step's parts come to the whole of it, so no line")
    assert "p.py:44" in line and "%" not in line
