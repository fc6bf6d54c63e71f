#!/usr/bin/env python3
"""Writes mesh-host-fleet.json, the Grafana dashboard shipped beside the
alert rules: a fleet overview and one host's drill-down by instance.

Edit the panels here and run it (python3 metrics/dashboards/make_dashboard.py);
tests/alerts/dashboard_test.py checks the JSON is this script's output, that
it holds to the schema fields it uses, and evaluates every query against a
real Prometheus scraping real daemons.
"""

import json
import os

DS = {"type": "prometheus", "uid": "${datasource}"}
J = 'job=~"$job"'
I = 'job=~"$job",instance=~"$instance"'


def wrong(sel):
    # What makes /healthz 503 and is visible in metrics.
    return (f"mesh_host_resource_failed{{{sel}}} == 1 or mesh_host_unit_active{{{sel}}} == 0 "
            f"or mesh_host_declaration_refused{{{sel}}} == 1")


def thresholds(*steps):
    return {"thresholds": {"mode": "absolute",
                           "steps": [{"color": c, "value": v} for v, c in steps]}}


class Board:
    def __init__(self):
        self.panels = []

    def row(self, title):
        self.panels.append({"id": len(self.panels) + 1, "type": "row", "title": title,
                            "collapsed": False, "panels": [],
                            "gridPos": {"h": 1, "w": 24, "x": 0, "y": 0}})

    def add(self, kind, title, exprs, w, h, description, unit=None, legend=None, steps=None):
        targets = []
        for i, expr in enumerate(exprs):
            t = {"datasource": DS, "refId": chr(ord("A") + i), "expr": expr}
            if kind in ("table", "stat"):
                t.update({"instant": True, "range": False})
                if kind == "table":
                    t["format"] = "table"
            else:
                t["range"] = True
            if legend:
                t["legendFormat"] = legend[i]
            targets.append(t)
        defaults = {}
        if unit:
            defaults["unit"] = unit
        if steps:
            defaults.update(thresholds(*steps))
        p = {"id": len(self.panels) + 1, "type": kind, "title": title,
             "description": description, "datasource": DS, "targets": targets,
             "gridPos": {"h": h, "w": w, "x": 0, "y": 0},
             "fieldConfig": {"defaults": defaults, "overrides": []}, "options": {}}
        if kind == "stat":
            p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "",
                                              "values": False},
                            "colorMode": "background", "graphMode": "none", "textMode": "value"}
        if kind == "table":
            p["transformations"] = [{"id": "organize", "options": {
                "excludeByName": {"Time": True, "__name__": True}}}]
        self.panels.append(p)

    def laid_out(self):
        # Left to right, a new line at 24 columns and at each row.
        x = y = height = 0
        for p in self.panels:
            g = p["gridPos"]
            if p["type"] == "row" or x + g["w"] > 24:
                y, x, height = y + height, 0, 0
            g["x"], g["y"] = x, y
            if p["type"] == "row":
                y += 1
            else:
                x, height = x + g["w"], max(height, g["h"])
        return self.panels


def dashboard():
    b = Board()
    b.row("Fleet")
    b.add("stat", "Hosts healthy",
          [f"count(up{{{J}}} == 1 unless on (instance) ({wrong(J)})) or vector(0)"], 6, 4,
          "Hosts scraped whose /healthz would say ok: no failed resource, no dead unit "
          "declared running, no refused declaration.", steps=[(None, "green")])
    b.add("stat", "Hosts unhealthy", [f"count(count by (instance) ({wrong(J)})) or vector(0)"],
          6, 4, "Hosts scraped with a failed resource, a dead unit declared running, or a "
          "refused declaration.", steps=[(None, "green"), (1, "red")])
    b.add("stat", "Hosts down", [f"count(up{{{J}}} == 0) or vector(0)"], 6, 4,
          "Targets Prometheus cannot scrape: the machine, its mesh-host or the network is down.",
          steps=[(None, "green"), (1, "red")])
    b.add("stat", "Declarations refused",
          [f"count(mesh_host_declaration_refused{{{J}}} == 1) or vector(0)"], 6, 4,
          "Hosts whose declaration in place is refused: they keep the generation last applied.",
          steps=[(None, "green"), (1, "orange")])
    b.add("table", "Failing resources", [f"mesh_host_resource_failed{{{J}}} == 1"], 8, 8,
          "Every failed resource, by host; its words are on that host's / and /status.")
    b.add("table", "Dead units", [f"mesh_host_unit_active{{{J}}} == 0"], 8, 8,
          "Units declared running that are not up: dead, or restarted by systemd and not up "
          "a settle since.")
    b.add("table", "Refused declarations", [f"mesh_host_declaration_refused{{{J}}} == 1"], 8, 8,
          "The refusal's first line, by host.")
    b.add("timeseries", "Failing resources by host",
          [f"sum by (instance) (mesh_host_resource_failed{{{J}}})"], 12, 8,
          "Failed resources per host over time.", legend=["{{instance}}"])
    b.add("timeseries", "Units flapping (restarts in 15 m)",
          ['sum by (instance, unit) (increase({__name__=~"mesh_host_unit_systemd_restarts_total|'
           f'mesh_host_unit_restarts_total",{J}}}[15m])) > 0'], 12, 8,
          "Restarts by systemd and by the host in the last 15 minutes; MeshHostUnitFlapping "
          "fires above 2.5.", legend=["{{instance}} {{unit}}"])
    b.add("timeseries", "Apply duration",
          [f"histogram_quantile({q}, sum by (le) (rate(mesh_host_reconcile_duration_seconds_bucket"
           f"{{{J}}}[$__rate_interval])))" for q in ("0.5", "0.99")], 12, 8,
          "How long an apply takes across the fleet, the settle pause included.", unit="s",
          legend=["p50", "p99"])
    b.add("timeseries", "Applies by result",
          [f"sum by (result) (rate(mesh_host_reconciles_total{{{J}}}[$__rate_interval]))"], 12, 8,
          "Applies a second across the fleet: ok, failed (a resource failed), refused (the "
          "declaration).", unit="ops", legend=["{{result}}"])

    b.row("Host $instance")
    b.add("stat", "Scraped", [f"up{{{I}}}"], 4, 4, "1 while Prometheus scrapes this host.",
          steps=[(None, "red"), (1, "green")])
    b.add("stat", "Things wrong", [f"count({wrong(I)}) or vector(0)"], 4, 4,
          "Failed resources, dead units and a refused declaration on this host now.",
          steps=[(None, "green"), (1, "red")])
    b.add("stat", "Generation", [f"mesh_host_declaration_generation{{{I}}}"], 4, 4,
          "The generation of the declaration applied.")
    b.add("stat", "Since the last ok apply",
          [f"time() - (mesh_host_last_success_timestamp_seconds{{{I}}} > 0 or "
           f"mesh_host_start_time_seconds{{{I}}})"], 4, 4,
          "Time since an apply ended ok (since mesh-host started, when none has).", unit="s")
    b.add("table", "Resources by kind", [f"mesh_host_resources{{{I}}}"], 4, 4,
          "Declared resources of the declaration in force.")
    b.add("table", "Version", [f"mesh_host_build_info{{{I}}}"], 4, 4, "The mesh-host running.")
    b.add("timeseries", "Units up", [f"mesh_host_unit_active{{{I}}}"], 12, 8,
          "1 while each unit declared running is up.", legend=["{{unit}}"])
    b.add("timeseries", "Restarts by systemd",
          [f"increase(mesh_host_unit_systemd_restarts_total{{{I}}}[$__rate_interval])"], 12, 8,
          "systemd's own restarts (Restart=), by unit.", legend=["{{unit}}"])
    b.add("timeseries", "Restarts asked by the host",
          [f"sum by (unit, reason) (increase(mesh_host_unit_restarts_total{{{I}}}"
           "[$__rate_interval]))"], 12, 8,
          "Starts and restarts mesh-host asked systemd for: declared, restart_on, was_dead.",
          legend=["{{unit}} {{reason}}"])
    b.add("timeseries", "Changes by outcome",
          [f'sum by (outcome) (increase(mesh_host_resource_outcomes_total{{{I},'
           f'outcome!="unchanged"}}[$__rate_interval]))'], 12, 8,
          "What the applies did, unchanged left out.", legend=["{{outcome}}"])
    b.add("timeseries", "Apply duration on this host",
          [f"histogram_quantile(0.9, sum by (le) (rate(mesh_host_reconcile_duration_seconds_bucket"
           f"{{{I}}}[$__rate_interval])))"], 12, 8, "p90 of this host's applies.", unit="s",
          legend=["p90"])
    b.add("table", "Failing here", [f"mesh_host_resource_failed{{{I}}} == 1"], 12, 8,
          "This host's failed resources.")

    variable = lambda name, label, query, **more: dict(
        {"name": name, "label": label, "type": "query", "datasource": DS,
         "query": {"query": query, "refId": name}, "definition": query, "refresh": 2,
         "sort": 1, "hide": 0, "current": {}}, **more)
    return {
        "title": "mesh-host fleet",
        "uid": "mesh-host-fleet",
        "description": "mesh-host across a fleet: hosts healthy, unhealthy and down, failing "
                       "resources, units dead or flapping, applies and refusals; and one host "
                       "by instance. What each alert means: docs/troubleshooting.md.",
        "tags": ["mesh-host"],
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "graphTooltip": 1,
        "refresh": "1m",
        "time": {"from": "now-6h", "to": "now"},
        "timezone": "",
        "annotations": {"list": []},
        "templating": {"list": [
            {"name": "datasource", "label": "Prometheus", "type": "datasource",
             "query": "prometheus", "current": {}, "hide": 0},
            variable("job", "job", "label_values(mesh_host_build_info, job)",
                     includeAll=True, multi=True, allValue=".+"),
            variable("instance", "host", 'label_values(mesh_host_build_info{job=~"$job"}, instance)',
                     includeAll=False, multi=False),
        ]},
        "panels": b.laid_out(),
    }


def text():
    return json.dumps(dashboard(), indent=2) + "\n"


if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mesh-host-fleet.json")
    with open(out, "w") as f:
        f.write(text())
    print(out)
