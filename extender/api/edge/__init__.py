"""The HTTP edge: our own HTTP/1.1 listeners, bounded against any client that reaches them.

`server` accepts connections through the listener's `door` (slots, displacement, overflow, rates, bytes);
each `connection` reads requests under the caps of `head` and `body`, in the states of `states`, and
hands them to a `responder`: `verb_responder` for kube-scheduler's verbs and the probes, `app_responder`
for an observe listener's read-only app. `encoding` writes the replies. `docs/hostile-input.md` says what
each limit bounds.
"""
