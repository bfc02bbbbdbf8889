//! Network namespaces for the repeaters: each runs in a namespace of its
//! own, joined to the host's by a veth pair; the brokers listen on the
//! host end of the first pair. Taking the host end of repeater `i`'s pair
//! down is a partition (its packets vanish, nothing is refused); `tc netem`
//! on it is packet loss, or, where the kernel has no `sch_netem`, an
//! nftables rule in the namespace that drops packets at random (`numgen
//! random`), in and out. Everything is made by the run and removed at its
//! end, also after a panic (drop); namespaces left by a run that was
//! SIGKILLed are removed by the next one.

use std::process::{Command, Stdio};

pub struct Net {
    /// The namespaces' names, one per repeater.
    pub names: Vec<String>,
    /// The host ends of the veth pairs.
    links: Vec<String>,
    /// The namespace ends.
    ns_ends: Vec<String>,
    /// The brokers' address, on the host end of the first pair.
    pub host: String,
    /// How packet loss is made here, if at all.
    pub loss_by: Option<LossBy>,
}

/// The tool that drops packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossBy {
    /// `tc qdisc … netem loss 30%` on both ends of the pair.
    Netem,
    /// An nftables table in the repeater's namespace whose input and output
    /// chains drop 30% of packets (`numgen random mod 100 < 30 drop`).
    Nftables,
}

/// The nftables table of the loss fault (in the namespace only).
const NFT_TABLE: &str = "chaos_loss";

fn nft_loss_rules() -> String {
    format!(
        "table inet {NFT_TABLE} {{\n\
         chain in {{ type filter hook input priority 0; numgen random mod 100 < 30 drop; }}\n\
         chain out {{ type filter hook output priority 0; numgen random mod 100 < 30 drop; }}\n\
         }}\n"
    )
}

/// Runs `ip netns exec NS nft -f -` with `rules` on its stdin.
fn nft_in(ns: &str, rules: &str) -> Result<(), String> {
    use std::io::Write;
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns, "nft", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("nft: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(rules.as_bytes())
            .map_err(|e| format!("nft: {e}"))?;
    }
    let out = child.wait_with_output().map_err(|e| format!("nft: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "nft in {ns}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Runs `ip ARGS` (or another program), quietly; Err with its stderr.
pub fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Net {
    /// `repeaters` namespaces, or why they cannot be made here.
    pub fn setup(repeaters: usize) -> Result<Net, String> {
        remove_stale();
        let pid = std::process::id();
        // 10.211.X.0/24, X from the pid, moved on while it is in use here.
        let used = Command::new("ip")
            .args(["-o", "-4", "addr", "show"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .map_err(|e| format!("ip: {e}"))?;
        let third = (0..250)
            .map(|k| (pid as usize + k) % 250)
            .find(|x| !used.contains(&format!("10.211.{x}.")))
            .ok_or("no free 10.211.X.0/24 for the veth pairs")?;
        let mut net = Net {
            names: Vec::new(),
            links: Vec::new(),
            ns_ends: Vec::new(),
            host: format!("10.211.{third}.1"),
            loss_by: None,
        };
        for i in 0..repeaters {
            net.add_pair(pid, third, i)?;
        }
        net.loss_by = net.probe_loss();
        Ok(net)
    }

    /// Tries netem on the first link, then nftables in the first namespace
    /// (each taken off again).
    fn probe_loss(&self) -> Option<LossBy> {
        let (link, ns) = (&self.links[0], &self.names[0]);
        if run(
            "tc",
            &["qdisc", "add", "dev", link, "root", "netem", "loss", "30%"],
        )
        .is_ok()
            && run("tc", &["qdisc", "del", "dev", link, "root"]).is_ok()
        {
            return Some(LossBy::Netem);
        }
        let drop_table = format!("delete table inet {NFT_TABLE}\n");
        (nft_in(ns, &nft_loss_rules()).is_ok() && nft_in(ns, &drop_table).is_ok())
            .then_some(LossBy::Nftables)
    }

    fn add_pair(&mut self, pid: u32, third: usize, i: usize) -> Result<(), String> {
        let ns = format!("chaos-{pid}-{i}");
        let host_end = format!("chq{pid}r{i}");
        let ns_end = format!("chq{pid}n{i}");
        // Repeater i's /30: .4i+1 on the host, .4i+2 in the namespace.
        let base = 4 * i;
        let host_addr = format!("10.211.{third}.{}/30", base + 1);
        let ns_addr = format!("10.211.{third}.{}/30", base + 2);
        let gateway = format!("10.211.{third}.{}", base + 1);
        run("ip", &["netns", "add", &ns])?;
        self.names.push(ns.clone());
        run(
            "ip",
            &[
                "link", "add", &host_end, "type", "veth", "peer", "name", &ns_end,
            ],
        )?;
        self.links.push(host_end.clone());
        self.ns_ends.push(ns_end.clone());
        run("ip", &["link", "set", &ns_end, "netns", &ns])?;
        run("ip", &["addr", "add", &host_addr, "dev", &host_end])?;
        run("ip", &["link", "set", &host_end, "up"])?;
        run("ip", &["-n", &ns, "addr", "add", &ns_addr, "dev", &ns_end])?;
        run("ip", &["-n", &ns, "link", "set", &ns_end, "up"])?;
        run("ip", &["-n", &ns, "link", "set", "lo", "up"])?;
        // The brokers' address (on the first pair) is local to the host:
        // reached through this pair's host end, no forwarding needed.
        run(
            "ip",
            &["-n", &ns, "route", "add", "default", "via", &gateway],
        )?;
        Ok(())
    }

    /// Cuts (`true`) or restores repeater `i`'s link.
    pub fn partition(&self, i: usize, cut: bool) -> Result<(), String> {
        let state = if cut { "down" } else { "up" };
        // The namespace end stays up, so its route stays: its packets go
        // out and are lost, as across a cut cable.
        run("ip", &["link", "set", &self.links[i], state])
    }

    /// 30% packet loss on repeater `i`'s link (both directions), or none.
    pub fn loss(&self, i: usize, on: bool) -> Result<(), String> {
        let (host, ns, ns_end) = (&self.links[i], &self.names[i], &self.ns_ends[i]);
        match (self.loss_by, on) {
            (None, _) => Err("no tool for packet loss here".into()),
            (Some(LossBy::Nftables), true) => nft_in(ns, &nft_loss_rules()),
            (Some(LossBy::Nftables), false) => {
                nft_in(ns, &format!("delete table inet {NFT_TABLE}\n"))
            }
            (Some(LossBy::Netem), true) => {
                run(
                    "tc",
                    &["qdisc", "add", "dev", host, "root", "netem", "loss", "30%"],
                )?;
                run(
                    "ip",
                    &[
                        "netns", "exec", ns, "tc", "qdisc", "add", "dev", ns_end, "root", "netem",
                        "loss", "30%",
                    ],
                )
            }
            (Some(LossBy::Netem), false) => {
                let a = run("tc", &["qdisc", "del", "dev", host, "root"]);
                let b = run(
                    "ip",
                    &[
                        "netns", "exec", ns, "tc", "qdisc", "del", "dev", ns_end, "root",
                    ],
                );
                a.and(b)
            }
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        // Deleting a namespace deletes its veth end, and with it the pair.
        for ns in &self.names {
            let _ = run("ip", &["netns", "del", ns]);
        }
        for link in &self.links {
            let _ = run("ip", &["link", "del", link]);
        }
    }
}

/// Removes `chaos-PID-*` namespaces whose run no longer exists.
fn remove_stale() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some(pid) = name
            .strip_prefix("chaos-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        if !alive {
            let _ = run("ip", &["netns", "del", name]);
        }
    }
}
