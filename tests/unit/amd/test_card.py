"""`python -m emu.amd.card`: one command shows an instruction's encodings, step, timing class and semantics source. Expected facts
from the ISA (V_ADD_F32 exists as VOP2 e32 and VOP3 e64, both VALU; V_ACCVGPR_READ is a CDNA VOP3P move the wheel has no pcode
for) and from the tables the card reads (the ldexp rule, the executor-owned moves)."""
from emu.amd.card import card, main

def test_a_vendor_compiled_op_shows_every_encoding_its_step_and_timing_class():
  text = card("gfx1100", "v_add_f32")
  assert "--- encoding VOP2 VOP2Op.V_ADD_F32_E32 (32 bits" in text and "--- encoding VOP3 VOP3Op.V_ADD_F32_E64 (64 bits" in text
  assert text.count("step ValuStep; timing: class valu, port valu") == 2
  assert "semantics of V_ADD_F32_E32: the vendor pcode, compiled\n" in text

def test_the_card_names_rules_and_executor_owned_ops():
  assert "compiled with the rules ldexp" in card("gfx1201", "v_ldexp_f32")
  acc = card("gfx942", "v_accvgpr_read")
  assert "step AccMoveStep" in acc and "owned by the executor" in acc

def test_an_unknown_mnemonic_says_so(capsys):
  assert main(["gfx1100", "v_no_such_op"]) == 0
  assert "(no encoding of V_NO_SUCH_OP on gfx1100)" in capsys.readouterr().out

def test_the_card_shows_the_grammar_and_the_data_a_store_sends():
  text = card("gfx1201", "global_atomic_cmpswap_b64")
  assert text.startswith("=== gfx1201 (rdna4) GLOBAL_ATOMIC_CMPSWAP_B64: prefix GLOBAL, operation ATOMIC_CMPSWAP, types B64\n")
  assert "timing: class vmem_store, port vmem, cost 19, dwords 4" in text   # compare and swap value: 2 x 64 bits; 3 + 4 * 4 cycles (rdna4)

def test_the_card_shows_how_operands_are_viewed_and_the_integer_clamp_rule():
  mad = card("gfx1100", "v_mad_u32_u24")   # ISA: D0.u32 = 32'U(S0.u24) * 32'U(S1.u24) + S2.u32; clamp saturates the exact result
  assert "operands viewed as D0 u, S0 u, S1 u, S2 u" in mad and "integer clamp (CLMP): the exact u24(a) * u24(b) + c saturated to U32" in mad
  assert "operands viewed as D0 f, S0 f, S1 i" in card("gfx1100", "v_ldexp_f16")   # the exponent is an i16: no float neg/abs on it
  assert "integer clamp" not in card("gfx1100", "v_add_f32")


def test_the_card_says_whether_the_instruction_may_join_a_native_region():
  assert "native regions: a candidate" in card("gfx1100", "v_add_f32")     # plain VALU (regions.plain_valu)
  assert "native regions: never" in card("gfx1100", "ds_swizzle_b32")     # a cross-lane swizzle: the executor's own step

def test_the_card_shows_ownership_the_sqtt_packet_and_the_fuzzing_oracle():
  end = card("gfx1201", "s_endpgm_saved")   # ISA: ends the wave; SQTT reports a wave's end as its WAVEEND packet
  assert "executor-owned (end)" in end and "timing: class end" in end and "SQTT: WAVEEND" in end
  assert "SQTT: never reported" in card("gfx1201", "s_delay_alu")   # consumed by the instruction buffer
  assert "fuzzing: oracle.rdna3 holds it" in card("gfx1100", "v_add_f32")
  assert "fuzzing: no ISA-text oracle" in card("gfx1100", "s_waitcnt")

def test_the_card_shows_the_latency_the_replay_gives():
  from emu.amd.timing import PARAMS
  p = PARAMS["rdna3"]   # docs/timing.md: a dependent VALU p.valu_dep cycles after its producer; a load's counter after p.vmem_load_lat
  assert f"a dependent VALU (s_delay_alu) issues {p.valu_dep} cycles after it" in card("gfx1100", "v_add_f32")
  # the wait on the counter issues when the load's counter is released, the instruction after it one cycle later
  assert f"the instruction after a wait on its counter issues {p.vmem_load_lat + 1} cycles after it" in card("gfx1100", "global_load_b32")

def test_an_opcode_without_semantics_gets_a_card_that_says_so():
  text = card("gfx1100", "ds_gws_init")   # a GWS op: the wheel has no pseudocode for it and the emulator does not model it
  assert "semantics of DS_GWS_INIT: none (" in text and "does not run" in text
