//! Network addresses as the plugins judge them.

/// Whether `host` names this machine only: `localhost` or a loopback IP
/// address, in any form the resolver accepts for IPv4 (`127.1`). A daemon
/// may then serve plain HTTP without a token, and a client may send one in
/// clear.
///
/// ```
/// use app_plugin::net::is_loopback_host;
/// assert!(is_loopback_host("127.0.0.1") && is_loopback_host("::1") && is_loopback_host("LocalHost"));
/// assert!(is_loopback_host("127.1") && is_loopback_host("127.0.0.9"));
/// assert!(!is_loopback_host("0.0.0.0") && !is_loopback_host("example.org"));
/// assert!(!is_loopback_host("128.1") && !is_loopback_host("127.") && !is_loopback_host("1.127"));
/// ```
pub fn is_loopback_host(host: &str) -> bool {
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return ip.is_loopback();
    }
    // Short IPv4 forms (`127.1`): the first number is the first octet.
    let parts: Vec<&str> = host.split('.').collect();
    parts.len() <= 4
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && parts[0] == "127"
}
