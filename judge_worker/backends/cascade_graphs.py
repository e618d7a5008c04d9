"""The cascade's decode forward as CUDA graphs, replayed with each step's layout."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from judge_worker.backends.cascade import ContinuousRun

# Padded row counts of the decode graphs: at most a third of a step's rows are padding.
_GRAPH_BUCKETS = (8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048)


class DecodeGraphs:
    """The decode forward as CUDA graphs, one per padded row count, captured when first needed.

    Eagerly a decode step launches some 40 kernels per layer from Python; with few rows the GPU
    waits on the host (H100, 7B shape: 16-32 ms a step at 96 rows against 46-50 ms at 768),
    while at 768 rows the step is the GPU's own (the fixed workload's decode: 6.83 s with
    graphs, 7.03 s eager). A graph launches them at once: it pays where batches are small (a
    32B model beside its weights, the tail of a variable-length run). The active rows are
    padded to the next bucket: a padding row belongs to no group (part A skips it), attends to
    and writes the pool's scratch slot (part B), and its output is dropped. The layout goes
    into the graph's own input tensors before each replay; the maxima the kernels take as
    plain numbers are fixed for the run (the largest group, the longest prefix, the row
    width). All graphs share one memory pool.
    """

    def __init__(self, run: ContinuousRun) -> None:
        self.run = run
        self.mempool = torch.cuda.graph_pool_handle()
        self.graphs: dict[int, tuple[Any, dict[str, Any], torch.Tensor]] = {}

    def _inputs(self, rows: int) -> dict[str, Any]:
        dev, pool = self.run.device, self.run.pool
        scratch = pool.scratch * pool.row_width

        def i32(n: int, fill: int) -> torch.Tensor:
            return torch.full((n,), fill, dtype=torch.int32, device=dev)

        return {
            "cu_q_groups": i32(rows + 1, 0),
            "max_q_groups": self.run.largest_group,
            "k_groups": i32(rows + 1, 0),
            "used_groups": i32(rows, 0),
            "max_prefix": self.run.longest_prefix,
            "cu_q_rows": torch.arange(rows + 1, dtype=torch.int32, device=dev),
            "k_rows": i32(rows + 1, scratch),
            "max_k": pool.row_width,
            "write": torch.full((rows,), scratch, dtype=torch.long, device=dev),
            "used": i32(rows, 1),
            "ids": torch.zeros((rows, 1), dtype=torch.long, device=dev),
            "pos": torch.zeros((rows, 1), dtype=torch.long, device=dev),
        }

    def _forward(self, inputs: dict[str, Any]) -> torch.Tensor:
        state = self.run.state
        state.mode, state.meta = "decode", inputs
        out = self.run.model(
            input_ids=inputs["ids"], position_ids=inputs["pos"], use_cache=False, cascade=state
        )
        logits: torch.Tensor = out.logits
        return logits

    def _capture(self, rows: int) -> tuple[Any, dict[str, Any], torch.Tensor]:
        inputs = self._inputs(rows)
        dev = self.run.device
        # The graph's memory pool is its own: hand the prefills' cached blocks back first.
        torch.cuda.empty_cache()
        side = torch.cuda.Stream(dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(side):  # warm-up off the capture (lazy inits, allocator)
            for _ in range(2):
                self._forward(inputs)
        torch.cuda.current_stream(dev).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.mempool):
            logits = self._forward(inputs)
        self.run.stats["graphs"] += 1
        return graph, inputs, logits

    def step(self, ids: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        """Replay the decode forward for the layout in ``run.state.meta``; float32 scores."""
        real = self.run.state.meta
        n = ids.shape[0]
        rows = next((b for b in _GRAPH_BUCKETS if b >= n), n)
        if rows not in self.graphs:
            try:
                self.graphs[rows] = self._capture(rows)
            finally:
                self.run.state.meta = real
        graph, inputs, logits = self.graphs[rows]
        pool = self.run.pool
        scratch = pool.scratch * pool.row_width
        groups = real["used_groups"].shape[0]
        inputs["cu_q_groups"][: groups + 1].copy_(real["cu_q_groups"])
        inputs["cu_q_groups"][groups + 1 :].fill_(n)
        inputs["k_groups"][:groups].copy_(real["k_groups"][:groups])
        inputs["used_groups"][:groups].copy_(real["used_groups"])
        inputs["used_groups"][groups:].zero_()
        inputs["k_rows"][:n].copy_(real["k_rows"][:n])
        inputs["k_rows"][n:].fill_(scratch)
        inputs["write"][:n].copy_(real["write"])
        inputs["write"][n:].fill_(scratch)
        inputs["used"][:n].copy_(real["used"])
        inputs["used"][n:].fill_(1)
        inputs["ids"][:n].copy_(ids)
        inputs["ids"][n:].zero_()
        inputs["pos"][:n].copy_(pos)
        inputs["pos"][n:].zero_()
        graph.replay()
        return logits[:n, -1, :].float()
