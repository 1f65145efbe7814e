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
ends both process groups whatever happens; `start` hands the running hosts
to a test that kills one (a lost machine) and watches the other.
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


class Hosts:
    """Two started hosts: `procs` (one `Popen` each, the leader of its own
    process group) and their output files. `kill(host)` SIGKILLs one
    host's whole group (torchrun's children too), as a lost machine;
    `wait(host, timeout)` waits for one; `stop()` ends every group and
    returns `[(returncode, stdout, stderr)]`."""

    def __init__(self, procs, logs):
        self.procs, self.logs = procs, logs

    def kill(self, host):
        try:
            os.killpg(self.procs[host].pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.procs[host].wait()

    def wait(self, host, timeout):
        """The host's return code, or None if it still runs after `timeout` s."""
        try:
            return self.procs[host].wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        for host in range(len(self.procs)):
            self.kill(host)
        results = []
        for proc, (out, err) in zip(self.procs, self.logs):
            out.seek(0), err.seek(0)
            results.append((proc.returncode, out.read(), err.read()))
            out.close(), err.close()
        return results


def start(backend, argv, root, env=None):
    """Start `argv` on two stand-in hosts under `root` (each in its own
    directory `root/hostN`); returns a `Hosts`."""
    procs, logs = [], []
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
    except BaseException:
        Hosts(procs, logs).stop()
        raise
    return Hosts(procs, logs)


def report(results, backend, timeout=None):
    """Raise AssertionError with the output of every host that failed."""
    failed = [(i, r) for i, r in enumerate(results) if r[0] != 0]
    assert not failed, (f"the {backend} hosts ran past {timeout} s\n"
                        if timeout else "") + "\n".join(
        f"host {i} exited {rc}:\n{out[-2000:]}\n{err[-4000:]}"
        for i, (rc, out, err) in failed)


def run(backend, argv, root, env=None, timeout=240):
    """Run `argv` on two stand-in hosts under `root`; returns
    `[(returncode, stdout, stderr)]` per host. Raises AssertionError (with
    both hosts' output) when a host fails or the time runs out; a host that
    fails ends the other at once (it would wait for it in a collective)."""
    hosts = start(backend, argv, root, env)
    timed_out = False
    try:
        deadline = time.monotonic() + timeout
        procs = hosts.procs
        while any(p.poll() is None for p in procs):
            if any(p.poll() not in (None, 0) for p in procs):
                break
            if time.monotonic() > deadline:
                timed_out = True
                break
            time.sleep(0.2)
    finally:
        results = hosts.stop()
    report(results, backend, timeout if timed_out else None)
    return results
