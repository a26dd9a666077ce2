"""The `mtr` command from the venv is the CLI with its exit statuses, progress and Ctrl-C
behaviour: `--version`, exit 2 on a bad flag, 130 and the resume note on SIGINT; `mtr.run`
runs it as a child or in this process."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import mtr

DIALOGUE = (
    '{"id":"d","turns":[{"id":"d::1","user":"How do guinea pigs sleep?","answer":"In short naps.",'
    '"gold":[{"passage_id":"gp","grade":1}]},{"id":"d::2","user":"And what do they eat?",'
    '"rewrite":"What do guinea pigs eat?","gold":[{"passage_id":"food","grade":2}]}]}\n'
)
CORPUS = (
    '{"id":"gp","title":"Guinea pig","text":"Guinea pigs sleep in short naps with their eyes open."}\n'
    '{"id":"food","title":"Guinea pig diet","text":"Guinea pigs eat hay, fresh vegetables and pellets."}\n'
    '{"id":"cat","title":"Cat","text":"Cats eat meat and sleep sixteen hours a day."}\n'
)


def write_benchmark(root: Path) -> Path:
    b = root / "bench"
    b.mkdir()
    (b / "benchmark.toml").write_text('name = "t"\nlanguage = "en"\n')
    (b / "corpus.jsonl").write_text(CORPUS)
    (b / "dialogues.jsonl").write_text(DIALOGUE)
    (b / "qrels.tsv").write_text("d::1\t0\tgp\t1\nd::2\t0\tfood\t2\n")
    return b


def test_version(mtr_exe: str) -> None:
    out = subprocess.run([mtr_exe, "--version"], capture_output=True, text=True)
    assert out.returncode == 0
    assert out.stdout.strip() == f"mtr {mtr.__version__}"


def test_a_bad_flag_exits_2_with_clap_s_message(mtr_exe: str) -> None:
    out = subprocess.run([mtr_exe, "eval", "--no-such-flag"], capture_output=True, text=True)
    assert out.returncode == 2
    assert "unexpected argument '--no-such-flag'" in out.stderr


def test_eval_from_the_venv_prints_trec_eval_text(mtr_exe: str, tmp_path: Path) -> None:
    (tmp_path / "q").write_text("q1 0 d1 1\n")
    (tmp_path / "r").write_text("q1 Q0 d1 1 1.0 t\n")
    out = subprocess.run([mtr_exe, "eval", str(tmp_path / "q"), str(tmp_path / "r"), "-m", "map"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "map                   \tall\t1.0000\n"


class SilentServer:
    """An OpenAI-compatible endpoint that accepts connections and never answers: an audit
    against it waits on its calls until it is interrupted."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.connected = threading.Event()
        self.conns: list = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            self.connected.set()

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


def test_sigint_ends_a_running_command_with_130_and_the_resume_note(mtr_exe: str, tmp_path: Path, quiet_home: dict) -> None:
    bench = write_benchmark(tmp_path)
    server = SilentServer()
    cfg = tmp_path / "mtr.toml"
    cfg.write_text(
        f'[llm]\ncache = "{tmp_path / "cache.sqlite"}"\n'
        f'[[llm.endpoints]]\nname = "judge"\nbase_url = "{server.url}"\nmodel = "m"\ntimeout_s = 600\n'
        '[llm.roles]\njudges = ["judge"]\n'
    )
    proc = subprocess.Popen(
        [mtr_exe, "audit", str(bench), "-o", str(tmp_path / "audit"), "--config", str(cfg)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=quiet_home,
    )
    try:
        # the audit is waiting on a call: no timing guess, the server saw it connect
        while not server.connected.wait(0.2):
            if proc.poll() is not None:
                pytest.fail(f"the audit ended before calling its judge: {proc.communicate()}")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        server.close()
    assert proc.returncode == 130, err
    assert "mtr: interrupted; answers received so far are kept in the LLM cache: run the same command again to resume" in err


def test_run_as_a_child_returns_status_and_output(capsys) -> None:
    done = mtr.run(["--version"])
    assert done.returncode == 0 and done.stdout.strip() == f"mtr {mtr.__version__}"
    bad = mtr.run(["eval", "--no-such-flag"])
    assert bad.returncode == 2
    assert "--no-such-flag" in capsys.readouterr().err, "stderr is streamed"
    with pytest.raises(mtr.InputError):
        mtr.run(["eval", "--no-such-flag"], check=True)


def test_run_in_process_returns_instead_of_exiting() -> None:
    assert mtr.run(["eval", "--no-such-flag"], in_process=True).returncode == 2
    assert mtr.run(["--version"], in_process=True).returncode == 0
    # the interpreter goes on, and runs again
    assert mtr.run(["eval", "--bad"], in_process=True).returncode == 2


def test_python_dash_m_is_the_command() -> None:
    out = subprocess.run([sys.executable, "-m", "mtr", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("mtr ")
