"""Cheap reads of this machine for the built-in senses, where the OS offers one.

psutil answers everything everywhere, at a price paid on every compute: a scan of every
process through three files each, or a walk of every process's open files to find a
listening socket's holder. On Linux the same facts are one file per process
(:mod:`nerve.machine.procs`) and one netlink request for the sockets in LISTEN
(:mod:`nerve.machine.sockets`). Each function returns None where its fast path does not
apply (another OS, a /proc or netlink we may not read), and the sense falls back to psutil.
Standard library only: senses import this in their worker process.
"""
