-- v3 (issue 8, the sandbox): how each night isolated the code under test, so that
-- ticketctl stats shows a night that ran with sandbox: none.
ALTER TABLE runs ADD COLUMN sandbox TEXT NOT NULL DEFAULT '';
