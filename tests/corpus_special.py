"""The corpus's ``special`` notes (free text, each program its own), each read as the profile shows it.

Every note of ``corpus.json`` has one entry here, found by the words it begins with (``test_corpus_special``
fails on a note without one): a check of the profile, or why a profile cannot show it (``SHOWN_ELSEWHERE``: the
run's files, its output, how it was prepared; ``SAID_BY_FACTS``: a fact that ``corpus_facts`` checks already).
A check is built from a few rules of what a profile says (``solvers``, ``role``, ``per_step``, ...), each a
function of the profile giving the problems it finds.
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Union

from special_rules import (
    Check,
    all_of,
    backward_reaches,
    eager,
    evaluated_too,
    evaluation_every_step,
    forward_only_work,
    functions,
    fewer_than,
    grad_layers,
    holds,
    iterators,
    layers,
    module,
    monitors,
    note,
    outside,
    passes_in_steps,
    per_step,
    role,
    run_steps,
    solvers,
    static,
    trained_outside,
    update_on_ndarrays,
)

# Why a note is no figure of a profile.
SHOWN_ELSEWHERE = "the run's own files, output or setup: no figure of a profile (its output: tests/test_corpus)"
SAID_BY_FACTS = "a fact corpus_facts checks: steps, graphs and their when, solvers, auto_forward"
NOT_RECORDED = "work after the recording ended (the default schedule's window): no profile shows it"


Entry = Union[Check, str]


# (program, the words a note begins with) -> its check, or why no profile shows it.
SPECIAL: Dict[str, Sequence[tuple]] = {
    "s1-lenet": [
        ("validation inside the training loop", SAID_BY_FACTS),  # vpred's when, counted (corpus_facts.counts)
        ("save_checkpoint at i = 0", SHOWN_ELSEWHERE),
    ],
    "s1-resnet": [("only 5 steps", outside("vpred", "before the first kept step and after the last step"))],
    "s1-bnn": [
        (
            "binary-connect layers",
            all_of(layers("loss", "BinaryConnectConvolution"), layers("loss", "BinaryConnectAffine")),
        )
    ],
    "s1-dcgan": [
        ("two solvers, two distinct update entries", solvers(2, 1.0)),
        ("the discriminator's parameters are used by both", backward_reaches("loss_gen", "dis/", "gen/")),
        ("MonitorImageTile", all_of(monitors(4), per_step("loss_gen", 1.0))),
    ],
    "s1-vae": [("the evaluation graph loss_t runs every iteration", per_step("loss_t", 1.0, "evaluation"))],
    "s1-vat": [
        ("two updates of one solver", solvers(1, 2.0)),
        ("'yu' is not an evaluation", role("yu", "feeds")),
        ("loss_k: backward without update", role("loss_k", "backward")),
        ("a learning-rate change", "a solver's learning rate: no figure of a profile"),
    ],
    "s2-lstm-lm": [
        ("no NNabla DataIterator", iterators(False)),
        ("gradient clipping with eager NdArray functions", eager("PowScalar", "Sum")),
        ("validation once per epoch", all_of(role("vloss", "evaluation"), passes_in_steps("vloss", 5))),
    ],
    "s2-word2vec": [
        ("its own Python iterator class", iterators(False)),
        ("one parameter (e1/embed/W) used by two embed", layers("loss", "Embed", 1, second_use=True)),
    ],
    "s2-svd-lenet": [("prepare runs the reference training first", SHOWN_ELSEWHERE)],
    "s2-shufflenet": [("the validation (40 passes)", SAID_BY_FACTS)],
    "s2-python-api": [
        (
            "the one Sgd update before the loop",
            # (said where the log lists what ran outside the steps; "own_work" is nnprofile's share, as load sets it)
            all_of(run_steps(2000), trained_outside("Sgd", "before the first kept step")),
        ),
        ("the program variable `loss` names two", role("loss", "trained", trained=True)),
        ("imperative NdArray execution", all_of(eager("ReLU", where="outside"), note("after_windows"))),
        ("nn.clear_parameters() between the two models", SHOWN_ELSEWHERE),
    ],
    "s3-siamese": [
        ("one scope applied twice", layers("loss", "Convolution", 0, second_use=True)),
        ("needs compat/", SHOWN_ELSEWHERE),
    ],
    "s3-gcn": [
        ("full-batch, no DataIterator", iterators(False)),
        ("an evaluation every iteration", evaluation_every_step()),
        ("needs ", SHOWN_ELSEWHERE),
    ],
    "s3-prototypical": [
        ("its own episode generator", iterators(False)),
        ("solver made through `nnabla.solver`", module(False, "nnabla.solver")),
        ("t-SNE (scikit-learn) and matplotlib", SHOWN_ELSEWHERE),
        ("needs compat/", SHOWN_ELSEWHERE),
    ],
    "s3-maml": [
        ("nn.grad inside the trained graph", grad_layers("result_all")),
        ("a new graph per task", SAID_BY_FACTS),
        ("F.sink", layers("result_all", "Sink")),
        ("validation every 10 iterations", per_step("task_accuracya_var[j]", 0.2)),
        ("needs compat/", SHOWN_ELSEWHERE),
    ],
    "s3-pointnet": [
        ("validation once per epoch with another batch size", role("valid_loss_vars['loss']", "evaluation")),
        ("four MonitorSeries every step", monitors(4)),
        ("needs compat/", SHOWN_ELSEWHERE),
    ],
    "s3-distillation": [
        ("no backward through the teacher's layers", forward_only_work("loss", "teacher/")),
        ("prepare trains the teacher first", SHOWN_ELSEWHERE),
        (
            "the validation runs only at step 0 and after the loop",
            outside("vpred", "before the first kept step and after the last step"),
        ),
    ],
    "s4-attention": [
        ("the author's own Trainer class", all_of(per_step("metric", 0.0), per_step("loss", 1.0))),
        ("predict() under nn.auto_forward is defined but never called", static()),
        ("matplotlib plots", SHOWN_ELSEWHERE),
        ("needs compat/", SHOWN_ELSEWHERE),
    ],
    "s4-fasttext": [
        ("about 1600 functions a pass", all_of(functions("loss", 1500, 1700), layers("loss", "Embed", 400))),
        ("the loss is one of the Trainer's metrics", fewer_than("loss", 2.0)),
        ("matplotlib and a snapshot", SHOWN_ELSEWHERE),
        ("needs compat/", SHOWN_ELSEWHERE),
    ],
    "s4-poincare": [
        ("a solver written in Python", all_of(module(True), update_on_ndarrays())),
        (
            "batch size 1: tiny steps, Python-bound",
            "how fast: the step's figures, not a fact of the program's structure",
        ),
        ("matplotlib plot after training", SHOWN_ELSEWHERE),
        ("needs compat/", SHOWN_ELSEWHERE),
    ],
    "s4-td3": [
        ("an environment loop", SAID_BY_FACTS),
        ("iterations = 29 training updates", SAID_BY_FACTS),
        (
            "parameters updated by F.assign",
            all_of(role("update_target_expr", "updates"), layers("sync_target_expr", "Assign")),
        ),
        ("needs gym", SHOWN_ELSEWHERE),
    ],
    "s5-vqvae": [
        ("dynamic mode end to end", SAID_BY_FACTS),
        ("the graphs above are places in the code", SAID_BY_FACTS),
        ("solver.set_parameters(", solvers(1, 1.0)),
        ("forward work that no backward reaches", forward_only_work("loss")),
        ("'vector_quantizer' is a parameter", holds("vector_quantizer", "vq_vae/encoder")),
        (
            "ResidualStack.__call__ does not pass test on",
            "batch statistics or running ones: the same functions, no figure of a profile",
        ),
        ("CommunicatorWrapper", SHOWN_ELSEWHERE),
        ("checkpoints after epochs 0 and 2", SHOWN_ELSEWHERE),
        ("tqdm progress bars", SHOWN_ELSEWHERE),
        ("its configuration", SHOWN_ELSEWHERE),
        ("needs compat/gpu_stubs", SHOWN_ELSEWHERE),
        ("inside the trained graph's own build", forward_only_work("loss")),
    ],
    "s5-vqvae-prior": [
        ("prepare's before step", SHOWN_ELSEWHERE),
        (
            "two models, one solver",
            all_of(solvers(1, 1.0), holds("vq_vae/encoder", "ConditionalPixelCNN", "vector_quantizer")),
        ),
        ("dynamic mode end to end", layers("loss", "Mul2")),  # (auto_forward: corpus_facts.kinds)
        ("the graphs above are places in the code", SAID_BY_FACTS),
        (
            "the encoder runs with test=True",
            "batch statistics or running ones: the same functions, no figure of a profile",
        ),
        ("checkpoints after epochs 0 and 2", SHOWN_ELSEWHERE),
        ("tqdm progress bars", SHOWN_ELSEWHERE),
        ("needs compat/gpu_stubs", SHOWN_ELSEWHERE),
    ],
    "s6-sac": [
        ("three models trained in turn", all_of(solvers(3, 1.0), role("update_target_expr", "updates"))),
        (
            "the three losses share subgraphs",
            all_of(*(per_step(g, 1.0) for g in ("value_loss", "critic_loss", "actor_loss"))),
        ),
        ("an environment loop", SAID_BY_FACTS),
        ("at step 0: model_0.h5", outside("deterministic_act_t", "before the first kept step", 2000)),
        ("needs gym", SHOWN_ELSEWHERE),
    ],
    "s6-ddpg": [
        ("two models, two Adam solvers", solvers(2, 1.0)),
        ("the critic's target y is not detached", backward_reaches("critic_loss", "target/", "trainable/critic")),
        ("Ornstein-Uhlenbeck exploration noise", SHOWN_ELSEWHERE),
        ("171 env steps before the first update", SAID_BY_FACTS),
        ("needs gym", SHOWN_ELSEWHERE),
    ],
    "s6-cbow": [
        ("negative sampling in NumPy", iterators(True)),
        ("the author's Trainer class", evaluated_too("loss", "valid_data_iter")),
        ("a checkpoint (nn.save_parameters)", SHOWN_ELSEWHERE),
        ("after training a new small graph", NOT_RECORDED),
        ("needs compat/", SHOWN_ELSEWHERE),
        ("after the loop, outside the steps", NOT_RECORDED),
    ],
}


def problems(pid: str, notes: Sequence[str], profile, only_entries: bool = False) -> List[str]:
    """Each note's check's problems; a note without one entry is one (``only_entries``: only those)."""
    out = []
    entries = SPECIAL.get(pid, ())
    for text in notes:
        matched = [entry for start, entry in entries if text.startswith(start)]
        if len(matched) != 1:
            out.append("special note %r: %d entries in tests/corpus_special.py" % (text[:60], len(matched)))
        elif callable(matched[0]) and not only_entries:
            out += ["special %r: %s" % (text[:40], p) for p in matched[0](profile)]
    return out
