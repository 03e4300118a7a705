-- An environment can be deleted once no active key is bound to it; the
-- revoked keys that still reference it go with it.
alter table api_keys drop constraint api_keys_environment_id_fkey;
alter table api_keys add constraint api_keys_environment_id_fkey
  foreign key (environment_id) references environments (id) on delete cascade;
