"""The arrays `run` copies after the program to time a jit argument's copy sit at the address
alignment the program's arrays did: on CPU a 64-byte aligned NumPy buffer reaches XLA without a
copy and any other is copied, so timing the wrong kind measures the wrong thing."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from jaxopt_audit.runtime.run.copy_saving import CopySpec, copies_saving, host_array


@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8"])
def test_the_timed_array_has_the_programs_alignment(aligned: bool, dtype: str) -> None:
    host = host_array((3, 5), np.dtype(dtype), aligned)
    assert host.shape == (3, 5) and host.dtype == np.dtype(dtype)
    assert (host == 1).all()
    assert host.__array_interface__["data"][0] % 64 == (0 if aligned else 16)


def test_every_copy_after_the_first_is_counted_for_each_kind() -> None:
    saving, method = copies_saving(Counter({((64, 8), "<f4", False): 5, ((4,), "<f8", True): 1}))
    assert saving is not None and saving >= 0
    assert method.startswith("measured: a jitted call given NumPy arrays")
    assert "5 x" in method and "1 x" in method


def test_sampled_kinds_are_scaled_to_every_copy_made() -> None:
    # 3 of the 4 sampled copies were of the first kind: 30 of the 40 copies made
    specs: Counter[CopySpec] = Counter({((64, 8), np.dtype("float32"), True): 3,
                                        ((4,), np.dtype("float64"), False): 1})
    saving, method = copies_saving(specs, 40)
    assert saving is not None and saving >= 0
    assert "30 x" in method and "10 x" in method
    assert "(their shapes as on 4 sampled copies)" in method
