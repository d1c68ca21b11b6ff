"""An FSDP2 (`fully_shard`) training step of a small MLP, compiled, on every rank: run it with torchrun.

    harvest extract --nproc-per-node 2 examples/distributed/fsdp2_mlp.py

On CPUs it uses the gloo backend, on GPUs NCCL (one GPU per local rank; BACKEND=gloo runs more ranks than GPUs).
Each rank holds a shard of every parameter; FSDP2 gathers them around the compiled forward and backward.
"""

import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard


class Block(nn.Module):
    def __init__(self, width: int = 64):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 2 * width)
        self.down = nn.Linear(2 * width, width)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


def main() -> None:
    cuda = torch.cuda.is_available()
    dist.init_process_group(os.environ.get("BACKEND") or ("nccl" if cuda else "gloo"))
    rank = dist.get_rank()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count()) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    mesh = init_device_mesh(device.type, (dist.get_world_size(),))
    torch.manual_seed(0)
    model = nn.Sequential(Block(), Block()).to(device)
    for block in model:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    step = torch.compile(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    generator = torch.Generator().manual_seed(rank)
    x = torch.randn(16, 64, generator=generator).to(device)
    loss = step(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    print(f"rank {rank}: loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
