#!/usr/bin/env python3
"""Holds a file in the page cache until killed: maps it and locks the mapping (mmap + mlock).
A host whose DAMON evicts page cache within seconds would otherwise serve part of a "cached"
benchmark from the disk. Usage: python3 bench/pin.py FILE &  (then kill it)."""
import ctypes, os, sys, time

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
addr = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
if libc.mlock(ctypes.c_void_p(addr), ctypes.c_size_t(size)) != 0:
    sys.exit("mlock failed: %s" % os.strerror(ctypes.get_errno()))
while True:
    time.sleep(60)
