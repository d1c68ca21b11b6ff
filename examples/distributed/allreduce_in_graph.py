"""A collective inside the compiled graph: a functional all_reduce between two fused kernels, on every rank.

    harvest extract --nproc-per-node 2 examples/distributed/allreduce_in_graph.py

DDP and FSDP2 call their collectives outside the compiled graphs (in hooks); code that calls
torch.distributed._functional_collectives inside a compiled function gets them in the graph, where Inductor
places them between its kernels (all_reduce_ on the buffer, then wait_tensor before the kernel that reads it).
"""

import os

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol


@torch.compile
def mean_of_ranks_then_activate(x):
    y = torch.relu(x) * 2
    y = funcol.all_reduce(y, "sum", dist.group.WORLD) / dist.get_world_size()
    return y.sin() + 1


def main() -> None:
    dist.init_process_group(os.environ.get("BACKEND") or ("nccl" if torch.cuda.is_available() else "gloo"))
    rank = dist.get_rank()
    device = torch.device("cuda", rank % torch.cuda.device_count()) if torch.cuda.is_available() else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    generator = torch.Generator().manual_seed(rank)
    x = torch.randn(64, 32, generator=generator).to(device)
    print(f"rank {rank}: {mean_of_ranks_then_activate(x).sum().item():.4f}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
