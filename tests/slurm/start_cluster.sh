#!/usr/bin/env bash
# Start a one-node SLURM cluster on this machine (as root): munge, slurmctld, slurmd.
# Installs Debian's slurm-wlm and munge if missing. Used by CI and by
# tests/test_slurm.py; safe to run twice.
set -euo pipefail
if ! command -v slurmctld >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >/dev/null
fi
pip show snakemake-executor-plugin-slurm >/dev/null 2>&1 || pip install -q snakemake-executor-plugin-slurm
if sinfo -h -o %T 2>/dev/null | grep -qx idle; then echo "slurm: already up"; exit 0; fi
# A cluster left over from an earlier boot (same disk, dead jobs, node allocated)
# is restarted from a clean state: -c discards saved jobs.
pkill -x slurmctld 2>/dev/null || true
pkill -x slurmd 2>/dev/null || true
sleep 1
host=$(hostname -s)
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/{print $2}' /proc/meminfo) / 1024 - 2048 ))
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge /etc/munge
cat > /etc/slurm/slurm.conf <<EOF
ClusterName=fusionlab-ci
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ReturnToService=2
MinJobAge=3600
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
if [ ! -s /etc/munge/munge.key ]; then
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 2>/dev/null
fi
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
chmod 400 /etc/munge/munge.key
pgrep -x munged >/dev/null || runuser -u munge -- munged
slurmctld -c
slurmd -c
for _ in $(seq 60); do
  sinfo -h -o %T 2>/dev/null | grep -qx idle && { echo "slurm: one node up ($host, $cpus CPUs)"; exit 0; }
  sleep 1
done
echo "slurm: node did not come up; see /var/log/slurm/" >&2
sinfo >&2 || true
tail -n 5 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
exit 1
