"""Which layer NNabla was building when a project's network failed to build, so that the error names it."""

from __future__ import annotations

import re


class LayerTracker:
    """Remembers which layer NNabla was building, so that a failure can name it.

    NNabla's errors say what is wrong (and where in its C++ sources) but not in
    which layer; ``ProtoFunction.graph_call`` builds one layer at a time.
    """

    def __init__(self):
        self.layer = None
        self.layer_type = None
        self.network = None

    def __enter__(self):
        from nnabla.core.graph_def import ProtoFunction

        self._original = original = ProtoFunction.graph_call
        tracker = self

        def graph_call(pf, **kwargs):
            tracker.layer, tracker.layer_type = pf.name, pf.type
            owner = pf.owner() if callable(getattr(pf, "owner", None)) else None
            tracker.network = getattr(owner, "name", None)
            return original(pf, **kwargs)

        ProtoFunction.graph_call = graph_call
        return self

    def __exit__(self, *exc):
        from nnabla.core.graph_def import ProtoFunction

        ProtoFunction.graph_call = self._original
        return False

    def error_text(self, e: Exception) -> str:
        text = " ".join(str(e).split())
        unsupported = re.match(r'Function "([^"]+)" is not supported', text)
        if unsupported:
            return "unknown layer type '%s' (NNabla %s has no such function)" % (
                unsupported.group(1),
                _nnabla_version(),
            )
        # "value error in setup_impl /path/affine.cpp:46 Failed `cond`: message" -> message
        failed = re.search(r"Failed `.*?`: (.*)$", text)
        if failed:
            text = failed.group(1)
        if len(text) > 300:
            text = text[:300] + "..."
        if self.layer:
            where = "layer '%s' (%s)%s" % (
                self.layer.replace("$EC$/", ""),
                self.layer_type,
                " of network '%s'" % self.network if self.network else "",
            )
            return "%s cannot be built: %s" % (where, text or type(e).__name__)
        return "the network cannot be built: %s%s" % (type(e).__name__, (": " + text) if text else "")


def _nnabla_version() -> str:
    import nnabla

    return nnabla.__version__
