"""What waking costs Python work on this machine, without a server.

The stub waits for each command in a blocking read, so its CPU goes idle
between requests. This times the same small piece of Python (marshal and
numpy calls of the size of the stub's per-request work) right after a
wait of 20, 40 and 200 microseconds, and again at once after that, in
pairs, so that the machine's drift in speed cancels: the ratio is the
price of running on a core that has just woken. Run:

    /usr/bin/python3 backend/python/testdata/bench/idle_penalty.py
"""
import marshal
import os
import select
import time

import numpy as np

a = np.arange(4, dtype=np.float32)
b = np.arange(4, dtype=np.float32)
msg = ["execute", 1, 64, [("id", 0, 0, 0, None, ["OUT0", "OUT1"],
                           [("INPUT0", "FP32", [1, 4], 128, 16), ("INPUT1", "FP32", [1, 4], 192, 16)])]]


def work():
    for _ in range(6):
        m = marshal.loads(marshal.dumps(msg, 2))
        x, y = (a + b).tobytes(), (a - b).tobytes()
        [np.ndarray((1, 4), np.float32, x) for _ in range(3)]
        del m, y


def paired(n, idle, r):
    woken, again = [], []
    for _ in range(n):
        select.select([r], [], [], idle)  # nothing comes: the CPU idles for `idle` seconds
        t0 = time.perf_counter_ns()
        work()
        t1 = time.perf_counter_ns()
        work()
        t2 = time.perf_counter_ns()
        woken.append(t1 - t0)
        again.append(t2 - t1)
    woken.sort()
    again.sort()
    return woken[n // 2] / 1000, again[n // 2] / 1000


def main():
    r, _ = os.pipe()
    for idle in (20e-6, 40e-6, 200e-6):
        for _ in range(2):
            w, h = paired(3000, idle, r)
            print("idle %3.0f µs: right after waking %.1f µs, the same work at once %.1f µs, ratio %.2f"
                  % (idle * 1e6, w, h, w / h))


if __name__ == "__main__":
    main()
