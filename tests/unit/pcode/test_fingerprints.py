"""Every override is pinned to the vendor text it replaces (emu/pcode/fix_fingerprints.json): a change of the wheel's pcode for an
overridden opcode fails here and names the opcode, so an upstream correction is reviewed instead of silently shadowed."""
import copy
from tinygrad.runtime.autogen.amd.rdna3.enum import VOP3Op
from emu.pcode import fingerprints, overrides

def test_every_override_matches_the_vendor_text_it_was_written_against():
  assert fingerprints.stale() == [], "review these overrides against the wheel's new pcode, then `python -m emu.pcode fingerprints --write`"

def test_every_kind_of_override_is_fingerprinted():
  rec = fingerprints.recorded()["rdna3"]
  assert "VOP3Op.V_CVT_OFF_F32_I4_E64" in rec and overrides.fixed_pcode(VOP3Op.V_CVT_OFF_F32_I4_E64, "rdna3")   # a corrected text
  assert "VOP3POp.V_WMMA_F32_16X16X16_F16" in rec                                          # a hand-written op
  assert "SOPPOp.S_WAITCNT" in rec                                                         # an executor-owned op
  assert "VOP2Op.V_ADD_F32_E32" not in rec                                                 # compiled from the vendor text: nothing to pin

def test_a_changed_vendor_text_or_a_new_override_is_reported():
  now = fingerprints.current()
  changed, new = copy.deepcopy(now), copy.deepcopy(now)
  changed["rdna3"]["VOP3Op.V_CVT_OFF_F32_I4_E64"] = fingerprints.fingerprint("D0.f32 = S0.f32")
  del new["cdna"]["SOPPOp.S_WAITCNT"]
  assert fingerprints.stale(changed, now) == ["rdna3 VOP3Op.V_CVT_OFF_F32_I4_E64"]   # the wheel's text changed
  assert fingerprints.stale(now, new) == ["cdna SOPPOp.S_WAITCNT"]          # an override without a fingerprint
  assert fingerprints.stale(new, now) == ["cdna SOPPOp.S_WAITCNT"]          # a fingerprint without an override
