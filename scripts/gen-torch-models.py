#!/usr/bin/python3
"""Writes the small TorchScript test models of backend/pytorch and cgo/torchrun.

Usage: /usr/bin/python3 scripts/gen-torch-models.py [OUTDIR]
       (default OUTDIR: backend/pytorch/testdata/models; `make torch-models`)

Needs Debian's python3-torch (PyTorch 1.13): `apt-get install -y python3-torch`.
The output is deterministic: running it twice gives byte-identical files.
Weights come from a fixed seed; each module is serialized into memory (so
the archive's folder is "archive" whatever the file is called); zip entries
carry no timestamps. TorchScript keeps the Python source file names of the
code it compiled or traced (debug info), so the script re-runs itself from
the checkout's root under the relative name scripts/gen-torch-models.py: the
files do not depend on where the checkout is.
Each model is loaded back and run once before it is written.
See backend/pytorch/testdata/models/README.md for what each model does.
"""

import io
import os
import sys

SELF = "scripts/gen-torch-models.py"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

if __name__ == "__main__" and (__file__ != SELF or os.environ.get("PYTHONHASHSEED") != "0"):
    # Re-run from the checkout's root with a relative, fixed file name (see
    # above); "<string>" is the only other frame a traced graph records.
    # And with a fixed hash seed: TorchScript writes a module's constants
    # (a BatchNorm's) in the order of a set of their names.
    out = [os.path.abspath(a) for a in sys.argv[1:]]
    boot = (
        "import sys, types\n"
        "m = types.ModuleType('__main__')\n"
        "m.__file__ = %r\n"
        "sys.modules['__main__'] = m\n"
        "sys.argv = [%r] + sys.argv[1:]\n"
        "exec(compile(open(%r).read(), %r, 'exec'), m.__dict__)\n"
    ) % (SELF, SELF, SELF, SELF)
    os.chdir(ROOT)
    os.execve(sys.executable, [sys.executable, "-c", boot] + out, dict(os.environ, PYTHONHASHSEED="0"))

from typing import Dict, List, Optional, Tuple  # noqa: E402

import torch  # noqa: E402
from torch import Tensor  # noqa: E402


class AddSub(torch.nn.Module):
    """Traced: (INPUT0 + INPUT1, INPUT0 - INPUT1)."""

    def forward(self, INPUT0, INPUT1):
        return INPUT0 + INPUT1, INPUT0 - INPUT1


class AddSubArgs(torch.nn.Module):
    """Scripted, arguments named a and b."""

    def forward(self, a: Tensor, b: Tensor) -> Tuple[Tensor, Tensor]:
        return a + b, a - b


class CNN(torch.nn.Module):
    """Traced small CNN: [N,1,28,28] -> logits [N,10]."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, kernel_size=3)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc = torch.nn.Linear(4 * 13 * 13, 10)

    def forward(self, INPUT__0):
        x = self.pool(torch.relu(self.conv(INPUT__0)))
        return self.fc(torch.flatten(x, 1))


class Strings(torch.nn.Module):
    """Scripted: byte lengths (INT64) and upper-cased copies of x."""

    def forward(self, x: List[str]) -> Tuple[Tensor, List[str]]:
        lengths = torch.tensor([len(s) for s in x], dtype=torch.int64)
        return lengths, [s.upper() for s in x]


class State(torch.nn.Module):
    """Scripted accumulator for implicit state: (x + state, x + state)."""

    def forward(self, x: Tensor, state: Tensor) -> Tuple[Tensor, Tensor]:
        y = x + state
        return y, y.clone()


class DTypes(torch.nn.Module):
    """Scripted: each input + 1 (bool: logical not), in the order of DTYPES."""

    def forward(
        self,
        b: Tensor,
        u8: Tensor,
        i8: Tensor,
        i16: Tensor,
        i32: Tensor,
        i64: Tensor,
        f16: Tensor,
        bf16: Tensor,
        f32: Tensor,
        f64: Tensor,
    ) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
        return (
            torch.logical_not(b),
            u8 + 1,
            i8 + 1,
            i16 + 1,
            i32 + 1,
            i64 + 1,
            f16 + 1,
            bf16 + 1,
            f32 + 1,
            f64 + 1,
        )


DTYPES = [
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
]


class Raises(torch.nn.Module):
    """Scripted: raises "negative input" when an element is < 0, else x * 2."""

    def forward(self, x: Tensor) -> Tensor:
        if bool((x < 0).any()):
            raise ValueError("negative input")
        return x * 2


class DictOut(torch.nn.Module):
    """Scripted: returns a Dict[str, Tensor] (not a return type Triton takes)."""

    def forward(self, x: Tensor) -> Dict[str, Tensor]:
        return {"y": x + 1}


class DictIn(torch.nn.Module):
    """Scripted: forward(d: Dict[str, Tensor]) -> d["a"] + d["b"]."""

    def forward(self, d: Dict[str, Tensor]) -> Tensor:
        return d["a"] + d["b"]


class Transpose(torch.nn.Module):
    """Scripted: x.t(), a non-contiguous view of a 2-D input."""

    def forward(self, x: Tensor) -> Tensor:
        return x.t()


class ScalarOut(torch.nn.Module):
    """Scripted: x.sum(), a 0-d tensor."""

    def forward(self, x: Tensor) -> Tensor:
        return x.sum()


class ListOut(torch.nn.Module):
    """Scripted: returns a List[Tensor] (not a return type Triton takes)."""

    def forward(self, x: Tensor) -> List[Tensor]:
        return [x, x + 1]


class TupleListInt(torch.nn.Module):
    """Scripted: returns (x, List[int]); element 1 is not a Tensor or List[str]."""

    def forward(self, x: Tensor) -> Tuple[Tensor, List[int]]:
        return x, [int(x.numel())]


class OtherArgs(torch.nn.Module):
    """Scripted: arguments of types Triton refuses (int, Optional[Tensor])."""

    def forward(self, x: Tensor, n: int, y: Optional[Tensor]) -> Tensor:
        if y is None:
            return x * n
        return x * n + y


class Modes(torch.nn.Module):
    """Scripted: (x + 1, BOOL [2]: [(x + 1).is_inference(), grad enabled]),
    [true, false] under torch::InferenceMode, [false, false] under
    torch::NoGradGuard (the INFERENCE_MODE tests)."""

    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        y = x + 1
        return y, torch.tensor([y.is_inference(), torch.is_grad_enabled()])


class NestedOut(torch.nn.Module):
    """Scripted: a nested tensor of x and x[:1] (rows of different lengths,
    which no Triton shape describes)."""

    def forward(self, x: Tensor) -> Tensor:
        return torch._nested_tensor_from_tensor_list([x, x[:1]])


class Training(torch.nn.Module):
    """Scripted, saved in training mode: x + 1 while self.training, else x
    (the backend runs a module in the mode it was saved in, as Triton)."""

    def forward(self, x: Tensor) -> Tensor:
        if self.training:
            return x + 1
        return x


# Saved as they are; every other module is saved in eval mode.
TRAINING = {"training.pt"}


def models():
    """(file name, module, example inputs) of every model."""
    torch.manual_seed(20)
    f = torch.ones(2, 16)
    cnn = CNN().eval()
    with torch.no_grad():
        traced = [
            torch.jit.trace(AddSub().eval(), (f, f)),
            torch.jit.trace(cnn, (torch.zeros(2, 1, 28, 28),)),
        ]
    dtypes = tuple(torch.zeros(2, 3, dtype=d) for d in DTYPES)
    return [
        ("addsub.pt", traced[0], (f, f)),
        ("addsub_args.pt", torch.jit.script(AddSubArgs()), (f, f)),
        ("cnn.pt", traced[1], (torch.zeros(3, 1, 28, 28),)),
        ("strings.pt", torch.jit.script(Strings()), (["ab", "c"],)),
        ("state.pt", torch.jit.script(State()), (f, f)),
        ("dtypes.pt", torch.jit.script(DTypes()), dtypes),
        ("raises.pt", torch.jit.script(Raises()), (f,)),
        ("dict_out.pt", torch.jit.script(DictOut()), (f,)),
        ("dict_in.pt", torch.jit.script(DictIn()), ({"a": f, "b": f},)),
        ("transpose.pt", torch.jit.script(Transpose()), (torch.ones(2, 3),)),
        ("scalar_out.pt", torch.jit.script(ScalarOut()), (f,)),
        ("list_out.pt", torch.jit.script(ListOut()), (f,)),
        ("tuple_list_int.pt", torch.jit.script(TupleListInt()), (f,)),
        ("other_args.pt", torch.jit.script(OtherArgs()), (f, 2, None)),
        ("modes.pt", torch.jit.script(Modes()), (f,)),
        ("training.pt", torch.jit.script(Training()), (f,)),
        ("nested_out.pt", torch.jit.script(NestedOut()), (torch.ones(3),)),
        ("inplace.pt", torch.jit.script(InPlace()), (torch.ones(4),)),
        ("keeps.pt", torch.jit.script(Keeps()), (torch.ones(4),)),
        ("keeps_in_list.pt", torch.jit.script(KeepsInList()), (torch.ones(4),)),
        ("batchnorm.pt", torch.jit.script(BatchNormed().eval()), (torch.ones(1, 1, 5, 5),)),
        ("fork_inplace.pt", torch.jit.script(ForkInPlace()), (torch.ones(4),)),
        ("copies_in.pt", torch.jit.script(CopiesIn()), (torch.ones(4),)),
        ("ragged.pt", torch.jit.script(Ragged()), (torch.ones(5), torch.tensor([0, 2, 5], dtype=torch.int32))),
        ("joined.pt", torch.jit.script(Joined()), (["ab", "c"],)),
    ]


# Models whose forward writes or keeps its input (after models(), whose
# line numbers the traced models' debug info records).


class InPlace(torch.nn.Module):
    """Scripted: x.add_(1) (the input written in place), then x * 2."""

    def forward(self, x: Tensor) -> Tensor:
        x.add_(1)
        return x * 2


class Keeps(torch.nn.Module):
    """Scripted: returns the x of the call before (zeros at first) and
    keeps this call's x in the module, as it is."""

    def __init__(self):
        super().__init__()
        self.prev = torch.zeros(4)

    def forward(self, x: Tensor) -> Tensor:
        prev = self.prev
        self.prev = x
        return prev.clone()


class KeepsInList(torch.nn.Module):
    """Scripted: like Keeps, x kept in a list attribute of the module."""

    def __init__(self):
        super().__init__()
        self.kept: List[Tensor] = [torch.zeros(4)]

    def forward(self, x: Tensor) -> Tensor:
        prev = self.kept[-1].clone()
        self.kept.append(x)
        if len(self.kept) > 2:
            self.kept.pop(0)
        return prev


def _add_one(x: Tensor) -> Tensor:
    x.add_(1)
    return x


class ForkInPlace(torch.nn.Module):
    """Scripted: x.add_(1) in a torch.jit.fork, then x * 2."""

    def forward(self, x: Tensor) -> Tensor:
        return torch.jit.wait(torch.jit.fork(_add_one, x)) * 2


class CopiesIn(torch.nn.Module):
    """Scripted: copies x into the module's buffer (reads x, keeps nothing
    of it), returns buffer * 2."""

    def __init__(self):
        super().__init__()
        self.buf = torch.zeros(4)

    def forward(self, x: Tensor) -> Tensor:
        self.buf.copy_(x)
        return self.buf * 2


class BatchNormed(torch.nn.Module):
    """Scripted Conv2d(1→2, 3×3) and BatchNorm2d in eval mode: forward's
    graph writes the module's own counter (num_batches_tracked, in the
    branch training takes), never its input."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 2, 3)
        self.bn = torch.nn.BatchNorm2d(2)

    def forward(self, x: Tensor) -> Tensor:
        return self.bn(self.conv(x))


class Ragged(torch.nn.Module):
    """Scripted, for ragged batching: x is the elements of every request of
    the batch in one rank-1 tensor, offsets where each request's elements
    start and end (batch input BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO);
    returns each element plus 100 times the index of its request."""

    def forward(self, x: Tensor, offsets: Tensor) -> Tensor:
        counts = (offsets[1:] - offsets[:-1]).long()
        request = torch.repeat_interleave(torch.arange(counts.numel()), counts)
        return x + 100 * request.to(x.dtype)


class Joined(torch.nn.Module):
    """Scripted: one string, x joined by spaces, whatever len(x) is."""

    def forward(self, x: List[str]) -> List[str]:
        return [" ".join(x)]


def main(argv):
    if len(argv) > 2:
        sys.exit("usage: gen-torch-models.py [OUTDIR]")
    out = argv[1] if len(argv) == 2 else "backend/pytorch/testdata/models"
    os.makedirs(out, exist_ok=True)
    for name, module, example in models():
        buf = io.BytesIO()
        torch.jit.save(module if name in TRAINING else module.eval(), buf)
        data = buf.getvalue()
        loaded = torch.jit.load(io.BytesIO(data))
        with torch.no_grad():
            loaded(*example)
        path = os.path.join(out, name)
        tmp = path + ".tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
        print(path)


if __name__ == "__main__":
    main(sys.argv)
    # Running fork_inplace.pt started libtorch's inter-op threads, which the
    # interpreter's exit can abort on ("terminate called without an active
    # exception", seen in CI): every file is written, leave without the
    # destructors.
    sys.stdout.flush()
    os._exit(0)
