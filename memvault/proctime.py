"""How long this process has existed, from the operating system's record of when it started.

A hook's user waits from the moment the host starts the process: interpreter start-up and imports
count. Python itself cannot see that time, the OS can. Standard library only (ctypes only on macOS
and Windows), and cheap: one small file read on Linux. Imported on the hook's prompt path.
"""

from __future__ import annotations

import os
import sys
import time

_origin: tuple[float, bool] | None = None


def started() -> tuple[float, bool]:
    """`time.monotonic()` at this process's start, and whether the OS said so (else: the moment of the first call).

    Computed once and then kept, so every caller in the process measures from the same moment.
    """
    global _origin
    if _origin is None:
        now, age = time.monotonic(), _age_seconds()
        _origin = (now - age, True) if age is not None and age >= 0 else (now, False)  # < 0: clocks disagree
    return _origin


def waited() -> dict[str, float | str]:
    """A hook's log fields for what the user waited until now: `duration_ms`, and `duration_from: "hook"`
    when the OS gave no start time (then start-up is not included)."""
    origin, from_process_start = started()
    fields: dict[str, float | str] = {"duration_ms": round((time.monotonic() - origin) * 1000, 1)}
    if not from_process_start:
        fields["duration_from"] = "hook"
    return fields


def _age_seconds() -> float | None:
    try:
        if sys.platform.startswith("linux"):
            return _linux()
        if sys.platform == "darwin":
            return _macos()
        if sys.platform == "win32":
            return _windows()
    except Exception:  # an unusual kernel or sandbox: fall back to counting from the first call
        return None
    return None


def _linux() -> float:
    """/proc/self/stat field 22: start time in clock ticks after boot, against CLOCK_BOOTTIME (the same clock)."""
    with open("/proc/self/stat", "rb") as handle:
        stat = handle.read()
    return age_from_stat(stat, time.clock_gettime(time.CLOCK_BOOTTIME), os.sysconf("SC_CLK_TCK"))


def age_from_stat(stat: bytes, boottime: float, hz: int) -> float:
    """Seconds since the start a /proc/<pid>/stat line records. The kernel rounds that start down to a whole
    clock tick (10 ms at the usual 100 Hz), so the process began somewhere in the tick after it: counting from
    the tick's middle makes the age right on average (within half a tick) instead of 5 ms too long."""
    fields = stat[stat.rindex(b")") + 2 :].split()  # the command name (field 2) may hold spaces and parentheses
    ticks = int(fields[19])  # field 22 counted from 1; fields[0] is field 3
    return boottime - (ticks + 0.5) / hz


def _macos() -> float:
    """sysctl KERN_PROC_PID: `kinfo_proc` begins with `p_starttime`, a struct timeval of the wall clock."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.sysctl.argtypes = [
        ctypes.POINTER(ctypes.c_int), ctypes.c_uint, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t),
        ctypes.c_void_p, ctypes.c_size_t,
    ]  # fmt: skip
    mib = (ctypes.c_int * 4)(1, 14, 1, os.getpid())  # CTL_KERN, KERN_PROC, KERN_PROC_PID
    buffer = ctypes.create_string_buffer(1024)  # sizeof(struct kinfo_proc) is 648 on 64-bit macOS
    size = ctypes.c_size_t(len(buffer))
    if libc.sysctl(mib, 4, buffer, ctypes.byref(size), None, 0) != 0 or size.value < 16:
        raise OSError(ctypes.get_errno(), "sysctl KERN_PROC_PID failed")
    seconds = ctypes.c_int64.from_buffer(buffer, 0).value
    micros = ctypes.c_int32.from_buffer(buffer, 8).value
    return time.time() - (seconds + micros / 1e6)


def _windows() -> float:
    """GetProcessTimes: the creation time as a FILETIME, against the current system time in the same unit."""
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    times = ctypes.POINTER(wintypes.FILETIME)
    kernel32.GetCurrentProcess.restype = wintypes.HANDLE  # a pseudo-handle: pointer-sized, not an int
    kernel32.GetProcessTimes.argtypes = [wintypes.HANDLE, times, times, times, times]
    kernel32.GetProcessTimes.restype = wintypes.BOOL
    creation, exited, kernel, user, now = (wintypes.FILETIME() for _ in range(5))
    process = kernel32.GetCurrentProcess()
    if not kernel32.GetProcessTimes(process, *(ctypes.byref(t) for t in (creation, exited, kernel, user))):
        raise OSError(ctypes.get_last_error(), "GetProcessTimes failed")  # type: ignore[attr-defined]
    kernel32.GetSystemTimePreciseAsFileTime(ctypes.byref(now))

    def ticks(filetime: wintypes.FILETIME) -> int:  # 100 ns units
        return (filetime.dwHighDateTime << 32) | filetime.dwLowDateTime

    return (ticks(now) - ticks(creation)) / 1e7
