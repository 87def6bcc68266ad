"""allocworker-worker: the RPC server processes."""

import sys

from allocworker.cmd import common
from allocworker import service


def main(argv=None):
    common.prepare(sys.argv[1:] if argv is None else argv)
    sys.exit(service.serve())
