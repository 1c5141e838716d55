"""Captures kept as decoded issue lists (emu.timing.decoded): the code rebuilt from the instruction text, and every way such a
capture can be unusable refused by name."""
import json, pickle
from pathlib import Path
import pytest
from emu.timing.compare import compare_file
from emu.timing.decoded import load_decoded, rebuild_code
from emu.timing.traces import load_trace

FOLDER = Path(__file__).resolve().parents[2] / "data" / "sqtt-more" / "2187nick-b22916159d" / "gfx1100"
CAPTURE = FOLDER / "mb_e1_valu_add_n10.pkl"

def test_a_capture_rebuilds_to_the_code_its_text_spells():
  (k,) = load_trace(CAPTURE)
  raw = pickle.load(open(CAPTURE, "rb"))
  assert (k.name, k.arch, k.launch) == ("mb_e1_valu_add_n10", "gfx1100", ((1, 1, 1), (1024, 1, 1)))
  assert len(k.waves) == len(raw) == 16
  firsts = [w.issues[0].cycle for w in k.waves]
  assert firsts == sorted(firsts)   # waves in the order of their first issue
  for w in k.waves:   # every issue keeps its pc and cycle, and its instruction prints as the capture's text
    (slot_rows,) = [rows for rows in raw.values() if rows[0][1] == w.issues[0].cycle and len(rows) == len(w.issues)][:1]
    assert [(i.pc, i.cycle, repr(i.inst)) for i in w.issues] == [(pc, cyc, text) for pc, cyc, _, text in slot_rows]
  assert k.cycles == max(w.end for w in k.waves) - min(firsts)

def test_the_replay_follows_the_captured_pcs():
  (r,) = compare_file(CAPTURE)
  assert r.error is None and r.unmatched == 0 and r.deltas

ROWS = [(256, "s_load_b64(s[0:1], s[0:1])"), (264, "s_waitcnt_lgkmcnt(NULL)"), (268, "s_endpgm()")]

def test_rebuild_tiles_the_code():
  code = rebuild_code(ROWS, "gfx1100")
  assert list(code) == [256, 264, 268] and [i.size() for i in code.values()] == [8, 4, 4]

@pytest.mark.parametrize("rows, why", [
  ([(256, "VOPD(VOPDOp.V_DUAL_MUL_F32, VOPDOp.V_DUAL_ADD_F32, v[4], v[5],")], "does not spell an instruction"),   # cut short
  ([(256, "__import__('os').system('true')")], "does not spell an instruction"),   # not a constructor call
  ([(256, "s_load_b64(s[0:1], s[0:1])"), (268, "s_endpgm()")], "the capture did not report"),   # 4 bytes missing
  ([(256, "s_load_b64(s[0:1], s[0:1])"), (260, "s_endpgm()")], "overlapping"),
  ([(256, "s_endpgm()"), (256, "s_nop(0)")], "holds both"),
  ([(256, "s_waitcnt_lgkmcnt(NULL, 0)")], "spells back as"),   # a spelling the wheel prints differently
])
def test_unusable_text_is_refused(rows, why):
  with pytest.raises(ValueError, match=why): rebuild_code(rows, "gfx1100")

def test_a_launch_is_required(tmp_path):
  (tmp_path / "gfx1100").mkdir()
  path = tmp_path / "gfx1100" / "k.pkl"
  path.write_bytes(CAPTURE.read_bytes())
  with pytest.raises(ValueError, match="launch.json"): load_trace(path)
  (tmp_path / "gfx1100" / "launch.json").write_text(json.dumps({"grid": [1, 1, 1]}))
  with pytest.raises(ValueError, match="grid.*workgroup"): load_trace(path)

@pytest.mark.parametrize("issues", [[(256, "0", "INST", "s_endpgm()")], [(256, 0, "INST")], "s_endpgm()"])
def test_a_malformed_issue_list_is_refused(issues):
  with pytest.raises(ValueError, match="is not a .pc, cycle, packet kind, instruction text. issue"):
    load_decoded({0: issues}, "k.pkl", "gfx1100", (1, 1, 1), (32, 1, 1))

def test_only_rdna_text_is_read():
  with pytest.raises(ValueError, match="RDNA3/RDNA4"): load_decoded({0: [(256, 0, "INST", "s_endpgm()")]}, "k.pkl", "gfx942", (1, 1, 1), (64, 1, 1))
