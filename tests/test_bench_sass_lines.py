"""bench/sass_lines.py's counting, on a hand-written nvdisasm -g excerpt (no compiler needed)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import sass_lines  # noqa: E402

EXCERPT = """
        //## File "/tmp/x/k.cu", line 212
        /*2510*/                   MUFU.RSQ R3, R2 ;
        /*2520*/                   ISETP.GT.U32.AND P0, PT, R8, 0x727fffff, PT ;
        /*2530*/              @!P0 BRA 0x2580 ;
        //## File "/usr/include/math_functions.hpp", line 7
        /*2580*/                   FMUL.FTZ R9, R2, R3 ;
        //## File "/tmp/x/k.cu", line 213
        /*2590*/                   FFMA R3, R2, R3, R9 ;
        /*25a0*/                   FFMA R2, -R9, R9, R2 ;
"""


def test_counts_by_opcode_and_source_line():
    ops, lines = sass_lines.counts(EXCERPT)
    assert ops == {"MUFU": 1, "ISETP": 1, "BRA": 1, "FMUL": 1, "FFMA": 2}
    assert lines == {("k.cu", 212): 3, ("math_functions.hpp", 7): 1, ("k.cu", 213): 2}


def test_build_label_with_changed_fields():
    """--build NAME+field=value: the released build's config with those fields replaced."""
    from kda_kernels import registry
    b = registry.find("k1_short", varlen=True, short_ht=False, short_chunks=4)
    v = sass_lines.build_of(f"build:{b.name}+next_early=False+min_blocks=3")
    assert v.stage == b.stage and not v.config.next_early and v.config.min_blocks == 3
    assert v.config.threads == b.config.threads and sass_lines.build_of(f"build:{b.name}") is b


def test_spec_labels_build_varlen_unless_fixed():
    spec = "1,128,5,holes,diag,ds,u0k2,ch32,rnr,tu,el,lp,sg"
    assert sass_lines.build_of(spec).config.varlen
    fixed = sass_lines.build_of(spec, varlen=False).config
    assert not fixed.varlen and fixed.chunk == 32 and fixed.name.startswith("k1_prepare_fixed")
