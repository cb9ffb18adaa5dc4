"""``Agent.display_roots`` in a real IPython shell: the page names folders by role."""

from __future__ import annotations

from pathlib import Path

from IPython.core.interactiveshell import InteractiveShell
from shell_helpers import MakeIp, run

from jupyter_memory.magics.state import forget_state
from jupyter_memory.widgets.roots import current_display_roots

NOTE = "%%remember --offline --type project --name units\nAmounts are integer cents."


def test_off_by_default_the_page_shows_the_paths(ip: InteractiveShell, memdir: Path) -> None:
    out = run(ip, NOTE).stdout
    assert str(memdir) in out and "<memdir>" not in out


def test_on_printed_text_names_the_roots(make_ip: MakeIp, tmp_path: Path) -> None:
    memdir = tmp_path / "proj" / "memory"
    shell = make_ip(memdir=memdir, config=["Agent.display_roots = True"])
    saved = run(shell, NOTE).stdout
    assert "in <memdir>" in saved and str(tmp_path) not in saved
    status = run(shell, "%agent status").stdout
    assert "Project: <project>" in status and "Memory: <memdir>" in status
    assert str(tmp_path) not in status


def test_views_name_the_roots_in_their_static_copies(make_ip: MakeIp, tmp_path: Path) -> None:
    shell = make_ip(config=["Agent.display_roots = True"])
    run(shell, NOTE)
    shown = run(shell, "%context")
    bundle = shown.outputs[0].data
    assert "&lt;memdir&gt;" in bundle["text/html"] or "<memdir>" in bundle["text/plain"]
    assert str(tmp_path) not in bundle["text/html"] + bundle["text/plain"]


def test_the_ipython_config_turns_it_on_before_the_extension_loads(
        make_ip: MakeIp, shell: InteractiveShell, tmp_path: Path) -> None:
    # What the course notebooks' setup cell does: no magic exists yet at that point.
    shell.config.Agent.display_roots = True
    ip = make_ip()
    assert "Memory: <memdir>" in run(ip, "%agent status").stdout


def test_switching_it_off_or_forgetting_the_kernel_shows_paths_again(
        make_ip: MakeIp, tmp_path: Path) -> None:
    shell = make_ip(config=["Agent.display_roots = True"])
    run(shell, "%agent status")
    assert current_display_roots() is not None
    run(shell, "%config Agent.display_roots = False")
    assert str(tmp_path) in run(shell, "%agent status").stdout
    run(shell, "%config Agent.display_roots = True")
    run(shell, "%agent status")
    forget_state(shell)
    assert current_display_roots() is None


def test_the_compaction_status_names_the_session_logs_folder(make_ip: MakeIp,
                                                             tmp_path: Path) -> None:
    shell = make_ip(config=["Agent.display_roots = True"])
    status = run(shell, "%compact --status").stdout
    assert "Session notes:" in status and "(<transcripts>/" in status
    assert str(tmp_path) not in status
    assert "-tmp-" not in status  # no half-named project key
