"""secret-handling on Helm values: webhook URLs and Alertmanager secrets given as literals are reported
wherever they sit (values, the text of value files, YAML or JSON text embedded in a value, every Helm resource
kind), and in-cluster URLs, references to Secrets and *_file paths pass. The variants are generated: every
violating case in every place and kind, counted."""

from __future__ import annotations

import itertools
import json

import pytest
import yaml
from policy_helpers import check_resource

HELM_KINDS = ("kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v3:Chart", "kubernetes:helm.sh/v4:Chart")
SLACK = "https://hooks.slack.com/services/T0000/B0000/" + "Xk2" * 8


def receivers(**config: object) -> dict:
    return {"alertmanager": {"config": {"receivers": [{"name": "oncall", **config}]}}}


VIOLATING = {
    "generic webhook receiver": receivers(webhook_configs=[{"url": "https://alerts.example.com/hook/8f3kq92"}]),
    "msteams receiver": receivers(msteams_configs=[{"webhook_url": "https://example.webhook.office.com/x/y"}]),
    "slack receiver": receivers(slack_configs=[{"api_url": SLACK, "channel": "#oncall"}]),
    "global slack_api_url": {"alertmanager": {"config": {"global": {"slack_api_url": "https://chat.example.com/h/1"}}}},
    "pagerduty routing_key": receivers(pagerduty_configs=[{"routing_key": "R0123456789abcdef"}]),
    "pagerduty service_key": receivers(pagerduty_configs=[{"service_key": "abc"}]),
    "pushover user_key": receivers(pushover_configs=[{"user_key": "u1", "token": "t1"}]),
    "telegram bot_token": receivers(telegram_configs=[{"bot_token": "123:abc", "chat_id": 1}]),
    "webhook basic auth": receivers(
        webhook_configs=[
            {"url": "http://router.monitoring.svc:9093/", "http_config": {"basic_auth": {"password": "pw"}}}
        ]
    ),
    "chart webhookUrl": {"notifier": {"webhookUrl": "https://notify.example.com/?key=abc123"}},
    "chart password": {"redis": {"auth": {"password": "changeme"}}},
    "chart adminPassword": {"grafana": {"adminPassword": "hunter2"}},
}
PASSING = {
    "in-cluster webhook": receivers(webhook_configs=[{"url": "http://alert-router.monitoring.svc:9093/hook"}]),
    "service-name webhook": receivers(webhook_configs=[{"url": "http://alert-router:9093/hook"}]),
    "url_file": receivers(webhook_configs=[{"url_file": "/etc/alertmanager/secrets/hook/url"}]),
    "routing_key_file": receivers(pagerduty_configs=[{"routing_key_file": "/etc/alertmanager/secrets/pd/key"}]),
    "existing secret": {"grafana": {"admin": {"existingSecret": "grafana-admin", "userKey": "user"}}},
    "prometheus url": {"prometheus": {"url": "https://prometheus.example.com"}},
    "template reference": {"auth": {"password": "{{ .Values.global.password }}"}},
}


def places(values: dict) -> dict[str, dict]:
    """The same values as a chart can be handed them: inline, as a value file's text, as YAML and JSON text
    inside a value."""
    return {
        "values": {"chart": "c", "values": values},
        "valueYamlFiles": {"chart": "c", "valueYamlFiles": [{"text": yaml.safe_dump(values)}]},
        "embedded YAML": {"chart": "c", "values": {"extra": {"config": yaml.safe_dump(values)}}},
        "embedded JSON": {"chart": "c", "values": {"extra": {"config": json.dumps(values)}}},
    }


def reported(kind: str, props: dict) -> list[str]:
    return check_resource("secret-handling", kind, props)


@pytest.mark.parametrize("name", VIOLATING)
def test_literal_webhooks_and_alertmanager_secrets_are_reported(name):
    assert reported(HELM_KINDS[0], {"chart": "c", "values": VIOLATING[name]})


@pytest.mark.parametrize("name", PASSING)
def test_in_cluster_urls_secret_references_and_files_pass(name):
    for place, props in places(PASSING[name]).items():
        assert reported(HELM_KINDS[0], props) == [], place


def test_every_violation_is_reported_in_every_place_and_helm_kind():
    cases = [
        (name, place, kind, props)
        for name, values in VIOLATING.items()
        for (place, props), kind in itertools.product(places(values).items(), HELM_KINDS)
    ]
    missed = [(name, place, kind) for name, place, kind, props in cases if not reported(kind, props)]
    assert (len(cases), missed) == (12 * 4 * 3, [])


def test_the_value_is_never_echoed():
    messages = reported(HELM_KINDS[0], {"chart": "c", "values": VIOLATING["pagerduty routing_key"]})
    assert messages and not any("R0123456789abcdef" in m for m in messages)
