"""scripts/pyfind.py — the plot scripts' one way to matplotlib: this Python's, else another python3 of this machine
that has it (the script re-runs itself there), else one line saying how to install it. Import it only after
argparse, so that --help works without matplotlib.
"""
import os
import shutil
import subprocess
import sys

_REEXEC = "RINGGPT_PLOT_REEXEC"   # set for the re-run, so that a Python that also lacks it does not loop


def matplotlib_python():
    """Another python3 on this machine that has matplotlib, or None."""
    seen = {os.path.realpath(sys.executable)}
    for cand in ("/usr/bin/python3", shutil.which("python3"), "/usr/local/bin/python3"):
        if not cand or not os.path.exists(cand) or os.path.realpath(cand) in seen:
            continue
        seen.add(os.path.realpath(cand))
        if subprocess.run([cand, "-c", "import matplotlib"], capture_output=True).returncode == 0:
            return cand
    return None


def pyplot(prog):
    """matplotlib.pyplot on the Agg backend; prog (the script's name) starts the message when there is none."""
    try:
        import matplotlib
    except ImportError:
        if os.environ.get(_REEXEC):
            sys.exit(f"{prog}: matplotlib is missing here too ({sys.executable})")
        other = matplotlib_python()
        if other:
            os.environ[_REEXEC] = "1"
            os.execv(other, [other] + sys.argv)
        sys.exit(f"{prog}: {sys.executable} has no matplotlib and no other python3 here has it; install it "
                 "(Debian: apt-get install python3-matplotlib; or: python3 -m pip install matplotlib)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt
