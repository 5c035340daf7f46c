"""
TabNet data-parallel over processes with torchrun
=================================================

Each process reads its own shard of the rows and fits the same
:class:`~sk_entmax.TabNetEntmaxClassifier` (same parameters, same ``random_state``) inside
:func:`sk_entmax.scale_out.data_parallel`: the gradients of every step are averaged over the
processes by ``torch.distributed``, so every process ends with the same model, and rank 0
saves it. Launch it with (``gloo`` on CPUs; ``nccl`` with ``--backend nccl`` on GPUs)::

    torchrun --nproc_per_node 2 --master_addr 127.0.0.1 --master_port 29500 \
        examples/torchrun/tabnet_data_parallel.py --out model.safetensors

The processes meet at an unauthenticated store on ``--master_port``, which torch serves on
every interface whatever ``--master_addr`` is: on a machine reachable from a network, keep
that port behind a firewall (see the user guide's "Scaling out").

The global batch is the sum of the processes' batches: ``--batch-size`` rows per process.
Every process must have as many training batches per epoch (shards of equal size do).
With ``--faithful`` the model has faithful masks: the columns it reads are chosen on the
losses averaged over the processes, so every process drops the same ones; ``--mask-warmup``
bounds the steps of that choice (the estimators' ``mask_warmup``).
"""

import argparse

import numpy as np
import torch
import torch.distributed as dist
from sklearn.datasets import make_classification

from sk_entmax import TabNetEntmaxClassifier
from sk_entmax.persistence import save
from sk_entmax.scale_out import data_parallel

parser = argparse.ArgumentParser()
parser.add_argument("--rows", type=int, default=20_000)
parser.add_argument("--epochs", type=int, default=20)
parser.add_argument("--batch-size", type=int, default=512)
parser.add_argument("--backend", default="gloo")
parser.add_argument("--out", default="tabnet_data_parallel.safetensors")
parser.add_argument("--faithful", action="store_true")
parser.add_argument("--mask-warmup", type=int, default=600)
args = parser.parse_args()

dist.init_process_group(args.backend)
rank, world = dist.get_rank(), dist.get_world_size()
device = f"cuda:{rank % torch.cuda.device_count()}" if args.backend == "nccl" else "cpu"

# every process makes the same table here; a real job reads its own files or row ranges
X, y = make_classification(args.rows, n_features=20, n_informative=8, random_state=0)
X_test, y_test = X[: args.rows // 5], y[: args.rows // 5]
X_train, y_train = X[args.rows // 5 :], y[args.rows // 5 :]
shard = np.arange(rank, len(X_train) - len(X_train) % world, world)  # equal shards

model = TabNetEntmaxClassifier(
    max_epochs=args.epochs,
    batch_size=args.batch_size,
    faithful_masks=args.faithful,
    mask_warmup=args.mask_warmup,
    random_state=0,
    device=device,
)
with data_parallel():
    model.fit(X_train[shard], y_train[shard])

accuracy = model.score(X_test, y_test)
print(f"rank {rank} of {world}: {model.n_iter_} epochs, test accuracy {accuracy:.4f}")
if args.faithful:
    unread = np.flatnonzero(model.never_read(X_test).all(axis=0)).tolist()
    print(f"rank {rank} of {world}: never read {unread}")
    # the selection's check put back what it had left out (the fit warned why)
    restored = getattr(model, "restored_features_", np.array([], dtype=int)).tolist()
    print(f"rank {rank} of {world}: put back {restored}")
if rank == 0:
    save(model, args.out)
dist.destroy_process_group()
