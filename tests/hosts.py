"""Two processes standing in for two hosts, started as docs/distribution.md
says each engine's hosts are started.

- JAX: `keras.distribution.initialize`'s variables
  (`KERAS_DISTRIBUTION_JOB_ADDRESSES` = the coordinator, process 0;
  `KERAS_DISTRIBUTION_NUM_PROCESSES`; `KERAS_DISTRIBUTION_PROCESS_ID`).
- TensorFlow: `TF_CONFIG` naming two workers; worker 0 is the chief.
- torch: one `torchrun --nnodes 2 --node-rank R` launcher per host, with
  the rendezvous at node 0.

Each host runs in its own working directory (`host0`, `host1`), so a file a
host writes with a relative path lands in its own directory. Every address
is 127.0.0.1; the ports are free ones picked here. `run` bounds the time and
ends both process groups whatever happens.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

HOSTS = 2


def free_ports(count):
    """`count` distinct free TCP ports on 127.0.0.1."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def commands(backend, argv):
    """`[(command, extra environment)]`, one per host, for `argv` (a
    script and its arguments) on `backend`."""
    ports = free_ports(HOSTS)
    out = []
    for host in range(HOSTS):
        env = {"KERAS_BACKEND": backend}
        command = [sys.executable, *argv]
        if backend == "jax":
            env.update(KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{ports[0]}",
                       KERAS_DISTRIBUTION_NUM_PROCESSES=str(HOSTS),
                       KERAS_DISTRIBUTION_PROCESS_ID=str(host))
        elif backend == "tensorflow":
            env["TF_CONFIG"] = json.dumps({
                "cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
                "task": {"type": "worker", "index": host}})
        else:
            env["GLOO_SOCKET_IFNAME"] = "lo"   # gloo on the loopback only
            command = [sys.executable, "-m", "torch.distributed.run",
                       f"--nnodes={HOSTS}", "--nproc-per-node=1",
                       f"--node-rank={host}", "--master-addr=127.0.0.1",
                       f"--master-port={ports[0]}", *argv]
        out.append((command, env))
    return out


def run(backend, argv, root, env=None, timeout=240):
    """Run `argv` on two stand-in hosts under `root`; returns
    `[(returncode, stdout, stderr)]` per host. Raises AssertionError (with
    both hosts' output) when a host fails or the time runs out; a host that
    fails ends the other at once (it would wait for it in a collective)."""
    procs, logs = [], []
    timed_out = False
    try:
        for host, (command, extra) in enumerate(commands(backend, argv)):
            cwd = os.path.join(root, f"host{host}")
            os.makedirs(cwd, exist_ok=True)
            full = dict(os.environ if env is None else env, **extra)
            for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                         "MASTER_PORT", "TF_CONFIG") if backend != "tensorflow" else ():
                full.pop(name, None)
            # Output to temporary files: nothing to drain while waiting.
            out, err = (tempfile.TemporaryFile("w+") for _ in range(2))
            logs.append((out, err))
            procs.append(subprocess.Popen(command, cwd=cwd, env=full, text=True,
                                          stdout=out, stderr=err,
                                          start_new_session=True))
        deadline = time.monotonic() + timeout
        while any(p.poll() is None for p in procs):
            if any(p.poll() not in (None, 0) for p in procs):
                break
            if time.monotonic() > deadline:
                timed_out = True
                break
            time.sleep(0.2)
    finally:
        for proc in procs:   # the whole group: torchrun's children too
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    results = []
    for proc, (out, err) in zip(procs, logs):
        out.seek(0), err.seek(0)
        results.append((proc.returncode, out.read(), err.read()))
        out.close(), err.close()
    failed = [(i, r) for i, r in enumerate(results) if r[0] != 0]
    assert not failed, (f"the {backend} hosts ran past {timeout} s\n"
                        if timed_out else "") + "\n".join(
        f"host {i} exited {rc}:\n{out[-2000:]}\n{err[-4000:]}"
        for i, (rc, out, err) in failed)
    return results
