"""`hitl-bridge completion SHELL`: the completion script for bash, zsh or fish (Click's own)."""

from __future__ import annotations

import click

SHELLS = {
    "bash": "eval \"$(hitl-bridge completion bash)\"   # in ~/.bashrc",
    "zsh": "eval \"$(hitl-bridge completion zsh)\"    # in ~/.zshrc",
    "fish": "hitl-bridge completion fish > ~/.config/fish/completions/hitl-bridge.fish",
}


@click.command(short_help="Print the completion script for bash, zsh or fish.",
               epilog="Install:\n\n\b\n" + "\n".join(f"  {line}" for line in SHELLS.values()))
@click.argument("shell", type=click.Choice(list(SHELLS)))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> int:
    """Print the shell completion script for SHELL: verbs, options, states and the ids of
    open requests complete with Tab."""
    from click.shell_completion import get_completion_class

    from bridge.cli import COMPLETE_VAR, PROG

    complete = get_completion_class(shell)
    assert complete is not None  # the choices are Click's own shells
    click.echo(complete(ctx.find_root().command, {}, PROG, COMPLETE_VAR).source())
    return 0
