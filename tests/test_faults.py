"""The fault campaign's cases (issue 37): each input a teacher might hand the tool by mistake is
refused in one line, or taken as meant; nothing outside --out is touched."""

from __future__ import annotations

from generator.running.roster import load_roster


def test_blank_rows_of_a_roster_are_skipped_before_the_students_are_counted(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name\n" + "\n" * 50_000 + ",\n" * 50_000 + "s1,Ann Lee\n", encoding="utf-8")
    students = load_roster(roster).students
    assert [(s.id, s.name) for s in students] == [("s1", "Ann Lee")]
