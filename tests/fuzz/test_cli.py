"""The `python -m fuzz` command line: runs, progress output, saved findings and replay."""
import json, subprocess, sys
from fuzz.__main__ import main
from fuzz.finding import Finding, save, load

def test_run_writes_progress_and_findings(tmp_path, capsys):
  assert main(["encoding.rdna3", "--time", "2", "--seed", "5", "--findings", str(tmp_path), "--every", "0.5"]) == 0
  out = capsys.readouterr().out
  assert "execs" in out and "/s)" in out and "findings" in out and "done" in out
  saved = list(tmp_path.glob("*.json"))
  assert saved, "rdna3 has known wheel bugs, a 2 s run finds some"
  rec = load(saved[0])
  assert rec["target"] == "encoding.rdna3" and rec["kind"] and "case" in rec

def test_replay_still_failing_and_passing(tmp_path, capsys):
  bad = {"arch": "rdna3", "cls": "MUBUF", "op": "BUFFER_LOAD_B32", "fields": {"op": 20, "soffset": 124}}
  good = {"arch": "rdna3", "cls": "VOP2", "op": "V_ADD_F32_E32", "fields": {"op": 3, "vdst": 1, "src0": 258, "vsrc1": 3}}
  pb = save(tmp_path, "encoding.rdna3", bad, Finding("wheel-decode-error", "x", key=("rdna3", "MUBUF")))
  pg = save(tmp_path / "g", "encoding.rdna3", good, Finding("made-up", "x"))
  assert main(["replay", str(pb)]) == 1
  assert main(["replay", str(pg)]) == 0
  assert "STILL FAILS" in capsys.readouterr().out

def test_same_bug_same_file(tmp_path):
  f = Finding("k", "detail one", key=("a", "b"))
  assert save(tmp_path, "t", {}, f) == save(tmp_path, "t", {"x": 1}, Finding("k", "detail two", key=("a", "b")))
  assert json.loads(next(tmp_path.glob("*.json")).read_text())["case"] == {"x": 1}

def test_unknown_target_and_list():
  assert main(["no-such-target", "--time", "0"]) == 2
  r = subprocess.run([sys.executable, "-m", "fuzz", "list"], capture_output=True, text=True, timeout=120)
  assert r.returncode == 0 and "encoding.cdna" in r.stdout and "x86" in r.stdout
