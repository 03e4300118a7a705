-- Page cursors carry creation times in milliseconds (RFC 3339 with ms);
-- stored with microseconds, rows later in a cursor's millisecond were
-- skipped. Store these keys at millisecond precision.
alter table runs alter column created_at type timestamptz(3);
alter table traces alter column created_at type timestamptz(3);
alter table review_events alter column created_at type timestamptz(3);
