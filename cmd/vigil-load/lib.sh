# Shared by the benchmark stacks (stack.sh, devstack.sh); sourced, not run.

# refuse_taken ADDR: exits when something already listens on ADDR (host:port). A load provider left
# running by an earlier stack would answer in place of the new one, and a phase that stops "the
# provider" (issue26.sh's F) would stop nothing.
refuse_taken() {
  if (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; then
    echo "something already listens on $1 (a load provider left running? kill \$PIDS of its env)" >&2
    exit 1
  fi
}
