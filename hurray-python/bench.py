"""Benchmark (not a test): hurray streams against a hand-written socket loop, over loopback TCP.

The baseline sends each tensor's raw bytes with ``sock.sendall`` and receives them with
``recv_into`` a preallocated numpy array (no names, no framing, no checks); hurray sends a
named tensor with its descriptor and receives it as a new tensor each time. Both run in the
same process and the same run, a sender thread and the receiving main thread, so only their
ratio means anything on a noisy machine.

    python3 hurray-python/bench.py [--rounds 5] [--repeat 1] [--processes] [--only "3 KiB named"]

Each round runs the raw loop and hurray back to back (which goes first alternates), each the
best of ``--repeat`` runs; a case prints each round's ratio and the median over the rounds.
"""

import argparse
import multiprocessing
import socket
import statistics
import threading
import time

import numpy as np

import hurray


def pair():
    srv = socket.create_server(("127.0.0.1", 0))
    c = socket.create_connection(srv.getsockname())
    s, _ = srv.accept()
    srv.close()
    for x in (c, s):
        x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return c, s


SEPARATE = False  # --processes: the sender in a forked process (its own interpreter lock)


def start(send, tx):
    if SEPARATE:
        p = multiprocessing.get_context("fork").Process(target=send)
        p.start()
        tx.close()
        return p
    return threading.Thread(target=send)


def raw(nbytes, count):
    tx, rx = pair()
    src = np.random.default_rng(0).integers(0, 255, nbytes, dtype=np.uint8)
    dst = np.empty(nbytes, np.uint8)

    def send():
        for _ in range(count):
            tx.sendall(src)
        tx.close()

    t0 = time.perf_counter()
    th = start(send, tx)
    if not SEPARATE:
        th.start()
    view = memoryview(dst)
    for _ in range(count):
        got = 0
        while got < nbytes:
            n = rx.recv_into(view[got:])
            if not n:
                raise EOFError
            got += n
    th.join()
    dt = time.perf_counter() - t0
    rx.close()
    return dt


def hurray_stream(nbytes, count, named):
    tx, rx = pair()
    src = np.random.default_rng(0).standard_normal(nbytes // 4).astype(np.float32)

    def send():
        with hurray.StreamWriter(tx) as w:
            if named:
                for i in range(count):
                    w.write(hurray.from_numpy(src, name=f"t/{i}"))
            else:
                t = hurray.from_numpy(src)
                for _ in range(count):
                    w.write(t)
        tx.close()

    t0 = time.perf_counter()
    th = start(send, tx)
    if not SEPARATE:
        th.start()
    n = 0
    for t in hurray.StreamReader(rx):
        if named:
            t.name
        n += 1
    th.join()
    dt = time.perf_counter() - t0
    rx.close()
    assert n == count
    return dt


CASES = [("1 MiB", 1 << 20, 300, False), ("16 MiB", 16 << 20, 30, False), ("3 KiB named", 3 << 10, 30000, True)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds (the median is reported)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per contender and round (best taken)")
    ap.add_argument("--processes", action="store_true", help="sender in a separate process")
    ap.add_argument("--only", action="append", help="run only this case (repeatable), e.g. '1 MiB'")
    args = ap.parse_args()
    global SEPARATE
    SEPARATE = args.processes
    print(f"{'case':<14}{'raw loop MB/s':>16}{'hurray MB/s':>14}{'ratio':>8}  rounds")
    for label, nbytes, count, named in CASES:
        if args.only and label not in args.only:
            continue
        raws, hs = [], []
        for r in range(args.rounds):
            runs = [
                ("raw", lambda: raw(nbytes, count)),
                ("hurray", lambda: hurray_stream(nbytes, count, named)),
            ]
            if r % 2:
                runs.reverse()
            for who, fn in runs:
                best = min(fn() for _ in range(args.repeat))
                (raws if who == "raw" else hs).append(best)
        mb = nbytes * count / 1e6
        ratios = [a / b for a, b in zip(raws, hs)]
        print(
            f"{label:<14}{mb / statistics.median(raws):>16.0f}{mb / statistics.median(hs):>14.0f}"
            f"{statistics.median(ratios):>8.2f}  " + " ".join(f"{x:.2f}" for x in ratios),
            flush=True,
        )


if __name__ == "__main__":
    main()
