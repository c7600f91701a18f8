# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""An offline command's option that sets what a node's parameter sets takes the setting's
default, range and description, so the command and the node never disagree."""

from __future__ import annotations

import argparse

import pytest

from waymark.agent.bintrack import BinTrackParams
from waymark.cli import USAGE_EXIT, ArgumentParser, add_setting_options, settings_from_options
from waymark.evaluation import harness
from waymark.parameters.memory import CaptionerParameters
from waymark.parameters.reasoner import AgentParameters, LLMParameters
from waymark.parameters.tasks import ConsolidationParameters
from waymark.settings import settings
from waymark.tasks import consolidation_cli


def _evaluation_parser() -> ArgumentParser:
    parser = ArgumentParser(prog='evaluate')
    harness.add_agent_arguments(parser)
    harness.add_captioner_arguments(parser)
    return parser


def _consolidate_parser() -> ArgumentParser:
    """`tasks consolidate`, its required folders given."""
    parser = ArgumentParser(prog='tasks')
    commands = parser.add_subparsers(dest='command', parser_class=ArgumentParser)
    consolidation_cli.add_consolidate_command(commands)
    parse = parser.parse_args
    parser.parse_args = lambda argv: parse(['consolidate', '--ledger', 'l', '--notes', 'n', *argv])
    parser.option_parser = commands.choices['consolidate']
    return parser


# (command's parser, option, settings dataclass, setting)
OPTIONS = [
    (_evaluation_parser, '--llm-timeout', LLMParameters, 'timeout_s'),
    (_evaluation_parser, '--agent-steps', AgentParameters, 'max_steps'),
    (_evaluation_parser, '--time-zone', AgentParameters, 'time_zone'),
    (_evaluation_parser, '--bt-alpha', BinTrackParams, 'alpha'),
    (_evaluation_parser, '--bt-beta', BinTrackParams, 'beta'),
    (_evaluation_parser, '--bt-k-leaf', BinTrackParams, 'k_leaf'),
    (_evaluation_parser, '--captioner-timeout', CaptionerParameters, 'timeout_s'),
    (_consolidate_parser, '--llm-timeout', ConsolidationParameters, 'timeout_s'),
    (_consolidate_parser, '--max-records', ConsolidationParameters, 'max_records'),
]


def _action(parser: argparse.ArgumentParser, option: str) -> argparse.Action:
    parser = getattr(parser, 'option_parser', parser)
    return next(action for action in parser._actions if option in action.option_strings)


def _setting(config_type: type, name: str):
    return next(info for info in settings(config_type) if info.name == name)


RANGED = [row for row in OPTIONS if _setting(row[2], row[3]).spec.low is not None]


@pytest.mark.parametrize(('make', 'option', 'config_type', 'name'), OPTIONS)
def test_an_option_has_the_settings_default_and_description(make, option, config_type, name):
    info = _setting(config_type, name)
    action = _action(make(), option)
    assert action.default == info.default
    assert action.help.replace('%%', '%') == info.spec.description


@pytest.mark.parametrize(('make', 'option', 'config_type', 'name'), RANGED)
def test_an_option_takes_the_ends_of_the_settings_range_and_refuses_beyond(
    make, option, config_type, name, capsys
):
    info = _setting(config_type, name)
    kind = info.kind
    parser = make()
    for end in (info.spec.low, info.spec.high):
        assert parser.parse_args([option, str(kind(end))]).__dict__[_dest(option)] == kind(end)
    beyond = kind(info.spec.high) + (1 if kind is int else info.spec.high)
    with pytest.raises(SystemExit) as exit_info:
        parser.parse_args([option, str(beyond)])
    assert exit_info.value.code == USAGE_EXIT
    error = capsys.readouterr().err
    assert f'argument {option}: {beyond!r} must be in [{info.spec.low:g}, {info.spec.high:g}]' in (
        error
    )
    assert error.count('\n') == 1


def _dest(option: str) -> str:
    return option.lstrip('-').replace('-', '_')


def test_a_value_of_the_wrong_kind_is_one_line(capsys):
    with pytest.raises(SystemExit):
        _consolidate_parser().parse_args(['--max-records', '2.5'])
    assert "argument --max-records: '2.5' is not int" in capsys.readouterr().err


def test_the_parsed_options_build_the_settings_with_the_rest_at_their_defaults():
    options = {'timeout_s': '--timeout', 'max_records': '--records'}
    parser = ArgumentParser(prog='x')
    add_setting_options(parser, ConsolidationParameters, options)
    args = parser.parse_args(['--timeout', '12.5'])
    built = settings_from_options(ConsolidationParameters, args, options)
    assert built == ConsolidationParameters(timeout_s=12.5)


def test_choices_and_bools_follow_their_settings(capsys):
    options = {'agent.level': '--level', 'agent.search_between': '--search-between'}
    from waymark.parameters.reasoner import ReasonerParameters

    parser = ArgumentParser(prog='x')
    add_setting_options(parser, ReasonerParameters, options)
    args = parser.parse_args(['--level', 'segment', '--no-search-between'])
    built = settings_from_options(ReasonerParameters, args, options)
    assert (built.agent.level, built.agent.search_between) == ('segment', False)
    with pytest.raises(SystemExit):
        parser.parse_args(['--level', 'room'])
    assert "argument --level: 'room' must be one of" in capsys.readouterr().err


def test_an_unknown_setting_is_a_programming_error():
    with pytest.raises(KeyError, match="LLMParameters has no setting 'timeout'"):
        add_setting_options(ArgumentParser(prog='x'), LLMParameters, {'timeout': '--timeout'})
