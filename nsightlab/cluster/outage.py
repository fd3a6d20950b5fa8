"""An API outage met while waiting for something: watched again, with backoff, until the
wait's own deadline, as `kubectl wait` does, and said on stderr when it starts and ends.

A refusal that waiting cannot mend (401, 403, 404, 409) ends the wait at once; so does
the deadline. Anything else the seam reports as a ClusterError (no answer, a reset, a
5xx, a page that is not JSON) is an outage: the wait goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from nsightlab.cluster.answers import Conflict, Forbidden, NotFound, Unauthorized
from nsightlab.errors import ClusterError

FIRST_WAIT = 0.5  # seconds before the first try again; doubled each time
MAX_WAIT = 5.0
FINAL = (Unauthorized, Forbidden, NotFound, Conflict)


class Outage:
    """Failures of one wait (`waiting_for`: "pod X to be Ready") until `deadline`
    (time.monotonic()). `failed(e)` sleeps before the next try, or raises; `answered()`
    after a request that worked."""

    def __init__(self, note: Callable[[str], None], waiting_for: str, deadline: float, *, limit: str) -> None:
        self.note = note
        self.waiting_for = waiting_for
        self.deadline = deadline
        self.limit = limit  # the option that sets the deadline, for messages: "--timeout 45"
        self.since: float | None = None  # when the current outage began
        self.tries = 0

    def failed(self, e: ClusterError) -> None:
        """Wait before trying again (never past the deadline), or raise: `e` itself when
        waiting cannot mend it, a ClusterError naming the outage at the deadline."""
        if isinstance(e, FINAL):
            raise e
        now = time.monotonic()
        if self.since is None:
            self.since = now
        self.tries += 1
        left = self.deadline - now
        if left > 0 and self.tries == 1:
            self.note(
                f"waiting for {self.waiting_for}: {e.message}; trying again until {self.limit} ({left:.0f} s left)"
            )
        if left > 0:
            time.sleep(min(MAX_WAIT, FIRST_WAIT * 2 ** (self.tries - 1), left))
        if time.monotonic() >= self.deadline:
            raise ClusterError(
                f"{e.message}; the API server did not come back within {self.limit} (tried {self.tries} "
                f"time{'s' if self.tries != 1 else ''} over {time.monotonic() - self.since:.0f} s)",
                hint=e.hint,
            ) from None

    def answered(self) -> None:
        """A request worked: an outage in progress is over."""
        if self.since is not None:
            self.note(
                f"the API server answers again after {time.monotonic() - self.since:.0f} s; still waiting for "
                f"{self.waiting_for}"
            )
        self.since = None
        self.tries = 0
