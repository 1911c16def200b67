from tomlet import loads


def test_indented_comment():
    assert loads("  # note\nport = 8080\n") == {"port": 8080}
