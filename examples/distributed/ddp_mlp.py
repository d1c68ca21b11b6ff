"""A DDP training step of a small MLP, compiled, on every rank: run it with torchrun.

    harvest extract --nproc-per-node 2 examples/distributed/ddp_mlp.py

On CPUs it uses the gloo backend, on GPUs NCCL (one GPU per local rank; BACKEND=gloo runs more ranks than GPUs).
`--divergent` gives rank 1 a larger batch, so the two ranks compile different graphs; `--rank-op` makes rank 1 scale
the model's output (one op more in the graph of rank 1, the other kernels the same); `--fail-rank R` makes rank R
raise after its first step, `--hang-rank R` makes rank R sleep after its work, instead of ending.
"""

import argparse
import gc
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel


class MLP(nn.Module):
    def __init__(self, width: int = 64):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 2 * width)
        self.down = nn.Linear(2 * width, width)
        self.scaled = False

    def forward(self, x):
        y = x + self.down(F.gelu(self.up(self.norm(x))))
        return y * 0.5 if self.scaled else y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--divergent", action="store_true", help="rank 1 trains on a larger batch")
    parser.add_argument("--rank-op", action="store_true", help="rank 1 scales the output: one more op in its graph")
    parser.add_argument("--fail-rank", type=int, default=-1, help="this rank raises after its first step")
    parser.add_argument("--hang-rank", type=int, default=-1, help="this rank sleeps after its work instead of ending")
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group(os.environ.get("BACKEND") or ("nccl" if cuda else "gloo"))
    rank = dist.get_rank()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count()) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    mlp = MLP().to(device)
    mlp.scaled = args.rank_op and rank == 1
    model = DistributedDataParallel(mlp, device_ids=[device.index] if cuda else None)
    step = torch.compile(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    batch = 32 if args.divergent and rank == 1 else 16
    generator = torch.Generator().manual_seed(rank)
    x = torch.randn(batch, 64, generator=generator).to(device)
    loss = step(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    if rank == args.fail_rank:
        raise RuntimeError(f"rank {rank} was told to fail (--fail-rank)")
    print(f"rank {rank}: loss {loss.item():.4f}")
    # DDP's reducer holds the process group: let it go while the group still lives, so that the group's destructor
    # runs in destroy_process_group (which releases the GIL) and not in the reducer's (which keeps it: gloo's worker
    # thread, still letting go of the barrier, needs the GIL, and the two wait for each other; torch 2.13, now and
    # then, with the ranks' timing).
    del step, model, optimizer
    gc.collect()
    dist.barrier()  # no rank tears the group down while another still uses it
    dist.destroy_process_group()
    if rank == args.hang_rank:
        time.sleep(3600)


if __name__ == "__main__":
    main()
