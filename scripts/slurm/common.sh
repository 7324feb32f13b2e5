# Shared settings of scripts/slurm-up and scripts/slurm-down (sourced, not run).
# Every file of the rig (config, spool, logs, pid files, munge key and socket) lives
# under one directory so that the rig never touches a system Slurm or munge.
STATE=${DISAGG_SLURM_DIR:-/tmp/disagg-slurm}
NNODES=${DISAGG_SLURM_NODES:-3}
PORT_BASE=${DISAGG_SLURM_PORT_BASE:-16817} # slurmctld; slurmd of node i gets PORT_BASE+i
GPUS_PER_NODE=8
CONF=$STATE/etc/slurm.conf
MUNGE_SOCKET=$STATE/munge/munge.socket.2
export SLURM_CONF=$CONF

node_names() {
  local i
  for ((i = 1; i <= NNODES; i++)); do echo "node$i"; done
}

# True when the pid file names a live process whose command is $2 and whose
# command line mentions this rig's directory (a reused PID is not ours).
rig_pid_alive() {
  local pidfile=$1 comm=$2 pid
  [ -s "$pidfile" ] || return 1
  pid=$(tr -dc '0-9' <"$pidfile")
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$comm" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$STATE/"
}

rig_pid() { tr -dc '0-9' <"$1"; }

log() { printf 'slurm rig: %s\n' "$*" >&2; }

# One slurm-up or slurm-down at a time: concurrent test runs share the rig.
lock_rig() {
  mkdir -p "$STATE"
  exec 9>"$STATE/.lock"
  flock 9
}
