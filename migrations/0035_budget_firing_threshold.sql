-- A budget alert fires once per window for each amount it watches: a config whose threshold (or whose
-- workspace cap, for a percent threshold) changed after it fired is armed again for the new amount, as users
-- of budget alerts expect; before, one firing per config and window was all, so a raised threshold never
-- fired that window. Firings before this migration keep the amount they recorded in their payload.
alter table budget_alert_firings add column threshold_amount bigint;
update budget_alert_firings set threshold_amount = coalesce((payload->>'threshold_amount')::numeric, cap_minor)::bigint;
alter table budget_alert_firings alter column threshold_amount set not null;
alter table budget_alert_firings drop constraint budget_alert_firings_config_id_time_window_window_start_key;
alter table budget_alert_firings
  add constraint budget_alert_firings_once unique (config_id, time_window, window_start, threshold_amount);
