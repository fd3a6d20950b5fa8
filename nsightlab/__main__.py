from __future__ import annotations

from nsightlab.cli import entry

if __name__ == "__main__":
    entry()
