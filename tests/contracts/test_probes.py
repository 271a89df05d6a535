"""The probe request contract (docs/architecture.md "Probe requests"): model output is untrusted, so a
probe's argument vector and working directory are bounded data, refused rather than cleaned; its
digest binds the run, the contract, the index and the probe; only a read_only run's analysis may
return probes."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from contracts.output import JobKind, OutputContractViolation, SpecialistOutput, check_output_for_job
from contracts.probes import MAX_PROBES, ApproveProbeRequest, ProbeRequest, probe_digest, probe_records

GOOD: dict[str, Any] = {
    "hypothesis": "the index is unused",
    "argv": ["psql", "-c", "EXPLAIN SELECT 1; rm -rf /"],
    "cwd": "db/migrations",
    "inputs": ["line one"],
    "expected_confirming": "a sequential scan",
    "expected_falsifying": "an index scan",
    "anticipated_effects": "none",
}


def test_a_well_formed_probe_keeps_its_arguments_as_data_shell_text_included() -> None:
    probe = ProbeRequest.model_validate(GOOD)
    assert probe.argv[2] == "EXPLAIN SELECT 1; rm -rf /"


@pytest.mark.parametrize(
    "cwd",
    ["/etc", "../outside", "docs/../../x", "docs//x", "docs/./x", "", "docs/", "a\\b", "a\nb", "a\x00b"],
)
def test_a_cwd_that_is_absolute_climbs_or_has_empty_segments_is_refused(cwd: str) -> None:
    with pytest.raises(ValidationError):
        ProbeRequest.model_validate(GOOD | {"cwd": cwd})


@pytest.mark.parametrize(
    "argv",
    [[], [""], ["ls", "a\x00b"], ["x" * 1_001], ["ls"] * 65, "ls -la", [["ls"]]],
)
def test_an_argv_that_is_empty_too_long_has_a_nul_or_is_a_string_is_refused(argv: object) -> None:
    with pytest.raises(ValidationError):
        ProbeRequest.model_validate(GOOD | {"argv": argv})


def test_unknown_keys_multi_line_inputs_and_oversized_text_are_refused() -> None:
    for hostile in (
        GOOD | {"shell": True},
        GOOD | {"inputs": ["one\ntwo"]},
        GOOD | {"hypothesis": "h" * 2_001},
        GOOD | {"inputs": ["x"] * 51},
    ):
        with pytest.raises(ValidationError):
            ProbeRequest.model_validate(hostile)


def test_the_digest_binds_run_contract_index_and_probe() -> None:
    probe = ProbeRequest.model_validate(GOOD)
    digest = probe_digest("SOR-A", "c" * 64, 1, probe)
    assert digest == probe_digest("SOR-A", "c" * 64, 1, ProbeRequest.model_validate(dict(GOOD)))
    other = ProbeRequest.model_validate(GOOD | {"argv": ["psql"]})
    assert (
        len(
            {
                digest,
                probe_digest("SOR-B", "c" * 64, 1, probe),
                probe_digest("SOR-A", "d" * 64, 1, probe),
                probe_digest("SOR-A", "c" * 64, 2, probe),
                probe_digest("SOR-A", "c" * 64, 1, other),
            }
        )
        == 5
    )
    (record,) = probe_records("SOR-A", "c" * 64, [probe])
    assert (record.index, record.sha256, record.status.value) == (1, digest, "requested")


def test_an_approval_names_a_full_digest_and_an_index_within_bounds() -> None:
    for bad in ({"index": 0}, {"index": MAX_PROBES + 1}, {"probe_sha256": "abc"}):
        with pytest.raises(ValidationError):
            ApproveProbeRequest.model_validate({"actor": "alice", "index": 1, "probe_sha256": "a" * 64} | bad)


def _output(**extra: Any) -> SpecialistOutput:
    return SpecialistOutput.model_validate(
        {
            "role": "database-optimizer",
            "axis": "database",
            "inspected_evidence": [],
            "findings": [],
            "confidence": 0.5,
            "confidence_band": "medium",
            "closure": "partial",
            "recommended_next_action": "run the probe",
        }
        | extra
    )


def test_results_recorded_before_probes_still_validate_with_none() -> None:
    assert _output().probe_requests == []


def test_more_than_five_probes_break_the_schema() -> None:
    with pytest.raises(ValidationError):
        _output(probe_requests=[GOOD] * (MAX_PROBES + 1))


def test_only_a_read_only_analysis_may_return_probes_a_review_or_change_job_may_not() -> None:
    output = _output(probe_requests=[GOOD])
    check_output_for_job(
        output, kind=JobKind.ANALYSIS, profile_id="database-optimizer", evidence_ids=[], allows_probes=True
    )
    with pytest.raises(OutputContractViolation, match="probe requests"):
        check_output_for_job(output, kind=JobKind.ANALYSIS, profile_id="database-optimizer", evidence_ids=[])
    review = _output(probe_requests=[GOOD], verdict="agree")
    with pytest.raises(OutputContractViolation, match="probe requests"):
        check_output_for_job(review, kind=JobKind.REVIEW, profile_id="database-optimizer", evidence_ids=[])
    change = _output(probe_requests=[GOOD], patch="diff --git a/x b/x\n")
    with pytest.raises(OutputContractViolation, match="probe requests"):
        check_output_for_job(
            change,
            kind=JobKind.ANALYSIS,
            profile_id="database-optimizer",
            evidence_ids=[],
            expects_patch=True,
        )
