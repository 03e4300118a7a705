-- Session JWTs ended before their expiry by POST /v1/auth/logout, by their `jti`. A row is needed only
-- until the JWT would have expired anyway; each sign-out forgets a bounded number of expired rows.
create table ended_sessions (
  jti text primary key,
  user_id uuid not null references users (id) on delete cascade,
  expires_at timestamptz(3) not null
);
create index ended_sessions_expiry on ended_sessions (expires_at);
