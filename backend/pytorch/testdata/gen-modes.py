#!/usr/bin/python3
"""Writes backend/pytorch/testdata/modes.pt, the model that shows the
grad mode forward runs under (for the INFERENCE_MODE tests).

Run from the checkout's root with Debian's python3-torch (PyTorch 1.13):
    /usr/bin/python3 backend/pytorch/testdata/gen-modes.py
forward(x: Tensor) -> (x + 1, BOOL [2]: [(x + 1).is_inference(),
torch.is_grad_enabled()]): [true, false] under torch::InferenceMode,
[false, false] under torch::NoGradGuard.
"""

import io

import torch
from torch import Tensor
from typing import Tuple


class Modes(torch.nn.Module):
    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        y = x + 1
        return y, torch.tensor([y.is_inference(), torch.is_grad_enabled()])


m = torch.jit.script(Modes().eval())
buf = io.BytesIO()
torch.jit.save(m, buf)
with open("backend/pytorch/testdata/modes.pt", "wb") as fh:
    fh.write(buf.getvalue())
loaded = torch.jit.load(io.BytesIO(buf.getvalue()))
with torch.inference_mode():
    assert loaded(torch.zeros(1))[1].tolist() == [True, False]
with torch.no_grad():
    assert loaded(torch.zeros(1))[1].tolist() == [False, False]
