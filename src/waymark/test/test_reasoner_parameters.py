# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""reasoner_node's parameters become the agent's models, limits, search bounds and trace
writer."""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path

import pytest

from waymark.agent.llm import ChatClient
from waymark.agent.relations import RelationParams
from waymark.agent.verifier import Verifier
from waymark.localisation.params import LocalisationParams
from waymark.parameters.reasoner import (
    LimitsParameters,
    LLMParameters,
    LocalisationParameters,
    ReasonerParameters,
    RelationParameters,
    TracesParameters,
    VerifierParameters,
)
from waymark.settings import replaced, settings

SERVER = 'http://127.0.0.1:8000/v1'
GROUPS = ('localisation', 'relations')


def parameters(llm=None, verifier=None) -> ReasonerParameters:
    return ReasonerParameters(
        llm=replace(LLMParameters(), **(llm or {})),
        verifier=replace(VerifierParameters(), **(verifier or {})),
    )


def test_without_a_server_there_is_no_llm_and_no_verifier():
    notes: list[str] = []
    assert parameters().llm_config() is None
    assert parameters().verifier_config(notes.append) is None
    assert notes == []


def test_the_llm_takes_its_settings_and_the_key_from_the_environment(monkeypatch):
    monkeypatch.setenv('TEST_LLM_KEY', 'secret')
    llm = parameters({'base_url': SERVER, 'api_key_env': 'TEST_LLM_KEY', 'timeout_s': 7.0})
    config = llm.llm_config()
    assert (config.base_url, config.model, config.api_key) == (
        SERVER,
        LLMParameters.model,
        'secret',
    )
    assert (config.timeout_s, config.accepts_images) == (7.0, True)
    monkeypatch.delenv('TEST_LLM_KEY')
    assert llm.llm_config().api_key == 'EMPTY'  # local servers take any key


def test_a_server_that_is_not_a_url_is_refused():
    with pytest.raises(ValueError, match=r"llm\.base_url='localhost:8000' must be an http"):
        parameters({'base_url': 'localhost:8000'}).llm_config()
    bad = parameters(verifier={'base_url': 'localhost:8000'})
    with pytest.raises(ValueError, match=r"verifier\.base_url='localhost:8000' must be an http"):
        bad.verifier_config(print)


def test_the_verifier_is_the_llm_when_it_accepts_images():
    notes: list[str] = []
    config = parameters({'base_url': SERVER}).verifier_config(notes.append)
    assert (config.llm.base_url, config.llm.model, config.llm.accepts_images) == (
        SERVER,
        LLMParameters.model,
        True,
    )
    assert config.max_images == VerifierParameters.max_images and notes == []


def test_a_text_only_llm_needs_a_named_verifier_and_says_so():
    notes: list[str] = []
    text_only = {'base_url': SERVER, 'accepts_images': False}
    assert parameters(text_only).verifier_config(notes.append) is None
    assert notes == ['verifier off: no verifier.model, and the LLM does not accept images']
    named = parameters(text_only, {'model': 'vlm', 'max_images': 3})
    config = named.verifier_config(notes.append)
    assert (config.llm.model, config.llm.accepts_images, config.max_images) == ('vlm', True, 3)
    off = parameters({'base_url': SERVER}, {'enabled': False})
    assert off.verifier_config(notes.append) is None and len(notes) == 1


def test_a_verifier_server_of_its_own_works_without_an_llm(monkeypatch):
    monkeypatch.setenv('TEST_VLM_KEY', 'vlm-key')
    own = {'base_url': 'https://vlm.example/v1', 'model': 'vlm', 'api_key_env': 'TEST_VLM_KEY'}
    config = parameters(verifier=own).verifier_config(print)
    assert (config.llm.base_url, config.llm.api_key) == ('https://vlm.example/v1', 'vlm-key')


def test_the_verifier_shares_the_agent_client_only_for_the_same_model():
    params = parameters({'base_url': SERVER})
    chat = ChatClient(params.llm_config())
    same = params.verifier_config(print)
    assert Verifier.sharing(same, chat).chat is chat
    other = replace(same, llm=replace(same.llm, model='another-vlm'))
    assert Verifier.sharing(other, chat).chat is not chat
    assert Verifier.sharing(same, None).chat.config == same.llm


def test_limits_and_traces_follow_their_settings(tmp_path):
    limits = replace(LimitsParameters(), max_question_chars=5, max_photo_pixels=9).input_limits()
    assert (limits.question_chars, limits.photo.max_pixels) == (5, 9)
    assert limits.problem('too long', []) != ''
    writer = TracesParameters(dir=str(tmp_path), max_files=3).writer()
    assert (writer.directory, writer.max_traces) == (Path(tmp_path), 3)
    assert TracesParameters(dir='').writer() is None
    assert TracesParameters(dir='~/t').writer().directory == Path.home() / 't'


def test_localisation_and_relations_keep_the_core_defaults_and_every_bound():
    config = ReasonerParameters().agent_config()
    assert config.localisation == LocalisationParams()
    assert config.relations == RelationParams()
    for group, core in (
        (LocalisationParameters, LocalisationParams),
        (RelationParameters, RelationParams),
    ):
        assert [item.name for item in fields(group)] == [item.name for item in fields(core)]
    bounds = [info for info in settings(ReasonerParameters) if info.path[0] in GROUPS]
    assert len(bounds) == len(fields(LocalisationParams)) + len(fields(RelationParams))
    assert all(info.spec.live for info in bounds)


def test_localisation_and_relations_values_reach_the_agent_config():
    params = ReasonerParameters(
        localisation=replace(LocalisationParameters(), standoff_m=1.5, max_rays=3),
        relations=replace(RelationParameters(), enabled=False, max_anchors=1, radius_m=4.0),
    )
    config = params.agent_config()
    assert (config.localisation.standoff_m, config.localisation.max_rays) == (1.5, 3)
    assert config.relations == replace(RelationParams(), enabled=False, max_anchors=1, radius_m=4.0)


def test_a_bad_combination_is_refused_naming_the_parameters():
    far = replace(LocalisationParameters(), assumed_range_m=20.0)  # beyond max_range_m
    with pytest.raises(ValueError, match=r'need localisation\.min_range_m < localisation\.assumed'):
        ReasonerParameters(localisation=far)
    wide = replace(LocalisationParameters(), standoff_angle_step_deg=120.0)
    with pytest.raises(ValueError, match=r'localisation\.standoff_angle_step_deg <= localisation'):
        ReasonerParameters(localisation=wide)
    none = replace(RelationParameters(), max_anchors=0)
    with pytest.raises(ValueError, match=r'relations\.max_anchors must be in \[1, 20\], got 0'):
        ReasonerParameters(relations=none)


def test_a_live_change_runs_the_same_checks():
    by_name = {info.name: info for info in settings(ReasonerParameters)}
    params = replaced(ReasonerParameters(), by_name['relations.max_visits'], 7)
    assert params.agent_config().relations.max_visits == 7
    with pytest.raises(ValueError, match=r'localisation\.max_range_m'):
        replaced(params, by_name['localisation.max_range_m'], 2.0)  # below assumed_range_m
