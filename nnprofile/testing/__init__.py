"""Regression tests of the logged layer order, first class.

    from nnprofile.testing import assert_layer_order, layer_order

    def test_lenet_keeps_its_layers():
        assert_layer_order("projects/lenet/lenet.nntxt", "tests/golden/lenet_order.txt")

``layer_order(project_or_result)`` is the log's skeleton: each section's header
line and its entries' labels, which carry each layer's implementation class
(``forward_function (conv1 : ConvolutionCudaCudnn)`` under cuDNN), in the order
the log gives them. For a project it takes setup and one pass per section, no
timing rounds (about a second on LeNet); a saved result (``nnprofile run`` or
a profile) is read as it is. ``assert_layer_order`` compares it with a golden
file, one label per line, and says what was added, removed or moved and which
class changed. ``pytest --nnprofile-update`` (the plugin nnprofile registers)
rewrites the golden files instead.

Nothing heavy is imported here until a function runs: pytest loads the plugin
in every session wherever nnprofile is installed.
"""

from .order import LayerOrderError, assert_layer_order, layer_order, order_difference

__all__ = ["layer_order", "assert_layer_order", "order_difference", "LayerOrderError"]
