"""scripts/pyfind.py — the Python helpers' one way to a module they need (matplotlib, numpy): this Python's, else another
python3 of this machine that has it (the script re-runs itself there), else one line saying how to install it. Import
it only after argparse, so that --help works without the module.
"""
import importlib
import os
import shutil
import subprocess
import sys

_REEXEC = "RINGGPT_PYFIND_REEXEC"   # set for the re-run, so that a Python that also lacks it does not loop

_INSTALL = {   # how to get each module, for the message
    "matplotlib": "Debian: apt-get install python3-matplotlib; or: python3 -m pip install matplotlib",
    "numpy": "Debian: apt-get install python3-numpy; or: python3 -m pip install numpy",
}


def python_with(module):
    """Another python3 on this machine that can import module, or None."""
    seen = {os.path.realpath(sys.executable)}
    for cand in ("/usr/bin/python3", shutil.which("python3"), "/usr/local/bin/python3"):
        if not cand or not os.path.exists(cand) or os.path.realpath(cand) in seen:
            continue
        seen.add(os.path.realpath(cand))
        if subprocess.run([cand, "-c", f"import {module}"], capture_output=True).returncode == 0:
            return cand
    return None


def require(module, prog):
    """module imported; where this Python lacks it, the script runs again in one that has it, or exits with one line
    that starts with prog (the script's name)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        pass
    if os.environ.get(_REEXEC):
        sys.exit(f"{prog}: {module} is missing here too ({sys.executable})")
    other = python_with(module)
    if other:
        os.environ[_REEXEC] = "1"
        os.execv(other, [other] + sys.argv)
    sys.exit(f"{prog}: {sys.executable} has no {module} and no other python3 here has it; install it "
             f"({_INSTALL.get(module, 'python3 -m pip install ' + module)})")


def pyplot(prog):
    """matplotlib.pyplot on the Agg backend (require's search and message where matplotlib is missing)."""
    matplotlib = require("matplotlib", prog)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt
