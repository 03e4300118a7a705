-- Why a stored policy was disabled because its document no longer compiles (for example a regex
-- the RE2 engine cannot run); null for every valid policy. Set when the policies are next loaded.
alter table policies add column invalid_reason text;
