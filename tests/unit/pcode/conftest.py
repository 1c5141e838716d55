"""Keep the generated-code cache of the test run out of the user's home."""
import os, tempfile
os.environ.setdefault("EMU_PCODE_CACHE", os.path.join(tempfile.gettempdir(), "emu-pcode-test-cache"))
