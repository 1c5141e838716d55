"""Child process of the `kernel.*` targets: realises tiny programs (fuzz.tiny_program) on the device tinygrad picks from DEV.

tinygrad reads DEV at import, so the parent starts one child per device string (e.g. `DEV=MOCKKFD+AMD:LLVM:gfx1100`) and sends
it many cases, one JSON line each on stdin; each answer is one JSON line: {"dtype", "shape", "data" (hex bytes)} or {"error"}.
"""
from __future__ import annotations
import json, sys

def main() -> None:
  """Answer cases from stdin until it closes."""
  from fuzz import tiny_program
  from tinygrad import Tensor
  from tinygrad.helpers import Context
  for line in sys.stdin:
    case = json.loads(line)
    try:
      with Context(ALLOW_TF32=int(case.get("allow_tf32", False))):   # read when the kernels are optimised, at realize
        out = tiny_program.build(case, [Tensor(tiny_program.input_array(i)) for i in case["inputs"]]).numpy()
      ans = {"dtype": out.dtype.str, "shape": list(out.shape), "data": out.tobytes().hex()}
    except Exception as e:
      # tinygrad's device-hang report (NV83DE) chains the mock's own reason (the fault, the refused instruction): keep both
      why = f" (from {type(e.__context__).__name__}: {str(e.__context__)[:400]})" if e.__context__ is not None else ""
      ans = {"error": f"{type(e).__name__}: {str(e)[:500]}{why}"}
    print(json.dumps(ans), flush=True)

if __name__ == "__main__": main()
