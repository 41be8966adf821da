//! The Rust twin of test/guests/c/sdk.c (same exports, same log lines): string arguments the
//! host passes as UTF-8 `(ptr, len)`, schedules declared as UTF-8, and the SDK's capability
//! wrappers. std on wasm32-unknown-unknown: its allocator backs `export_string_args!`.
use lockhost::{log, str_arg};

lockhost::export_abi_version!();
lockhost::export_string_args!();
lockhost::declare_schedules!("# the SDK guest's jobs\ntick 5s\nreport 0 3 * * *\n");
lockhost::host_function!(fn echo_fn = "billing"."echo");

/// Logs "hello <name> x<times>"; returns the name's length in bytes.
#[no_mangle]
pub extern "C" fn greet(name_ptr: *const u8, name_len: usize, times: i32) -> i32 {
    let name = unsafe { str_arg(name_ptr, name_len) };
    log::info(&format!("hello {} x{}", name, times));
    name.len() as i32
}

/// Logs "<a>+<b>"; returns the sum of their lengths in bytes.
#[no_mangle]
pub extern "C" fn concat(a_ptr: *const u8, a_len: usize, b_ptr: *const u8, b_len: usize) -> i32 {
    let (a, b) = unsafe { (str_arg(a_ptr, a_len), str_arg(b_ptr, b_len)) };
    log::info(&format!("{}+{}", a, b));
    (a.len() + b.len()) as i32
}

/// The declared jobs.
#[no_mangle]
pub extern "C" fn tick() -> i32 {
    1
}
#[no_mangle]
pub extern "C" fn report() -> i32 {
    2
}

/// Calls billing.echo with `msg` through a 2-byte buffer, then reads the whole reply: logs
/// "echo <reply> (<len>)" and returns its length, or logs "echo failed: <code>: <last_error>"
/// and returns -code.
#[no_mangle]
pub extern "C" fn echo(msg_ptr: *const u8, msg_len: usize) -> i32 {
    let msg = unsafe { str_arg(msg_ptr, msg_len) };
    let mut small = [0u8; 2];
    match echo_fn(msg.as_bytes(), &mut small) {
        Ok(n) => {
            let mut whole = vec![0u8; n];
            let len = lockhost::reply(n as i32, &mut whole).unwrap_or(0);
            log::info(&format!("echo {} ({})", String::from_utf8_lossy(&whole[..len]), len));
            n as i32
        }
        Err(e) => {
            log::warn(&format!("echo failed: {}: {}", e, lockhost::last_error()));
            -e.code()
        }
    }
}

/// Reads config key `key`: logs "config <key>=<value>" or "config <key>: <error>"; returns the
/// value's length or -code.
#[no_mangle]
pub extern "C" fn config(key_ptr: *const u8, key_len: usize) -> i32 {
    let key = unsafe { str_arg(key_ptr, key_len) };
    let mut buf = [0u8; 4];
    let short = lockhost::config_get(key, &mut buf);
    match lockhost::config(key) {
        Ok(v) => {
            // The buffer convention: the length whatever the buffer, the bytes only when they fit.
            let fits = matches!(short, Ok(n) if n == v.len());
            log::info(&format!("config {}={} (length ok: {})", key, v, fits));
            v.len() as i32
        }
        Err(e) => {
            log::info(&format!("config {}: {}", key, e));
            -e.code()
        }
    }
}

/// Logs "capability <name>: <yes|no>"; returns 1 or 0.
#[no_mangle]
pub extern "C" fn capability(name_ptr: *const u8, name_len: usize) -> i32 {
    let name = unsafe { str_arg(name_ptr, name_len) };
    let yes = lockhost::capability(name);
    log::info(&format!("capability {}: {}", name, if yes { "yes" } else { "no" }));
    yes as i32
}

/// One line at each level: "level debug", "level info", "level warn", "level error".
#[no_mangle]
pub extern "C" fn levels() {
    log::debug("level debug");
    log::info("level info");
    log::warn("level warn");
    log::error("level error");
}

/// Leads the election `name` with "v1", campaigns again (timing out while it leads itself),
/// proclaims "v2", reads the leader's JSON, resigns, reads it again, then tries the fair mutex
/// `name`: logs "campaign again: timed out", "proclaim: ok", "leader <json>", "resign: ok",
/// "leader <json>", "fair: held"; returns the term, or -code.
#[no_mangle]
pub extern "C" fn elect(name_ptr: *const u8, name_len: usize) -> i32 {
    let name = unsafe { str_arg(name_ptr, name_len) };
    let run = || -> Result<i32, lockhost::Error> {
        let lead = match lockhost::try_campaign(name, "v1", 10_000)? {
            Some(lead) => lead,
            None => {
                log::info("try_campaign: another leads");
                return Ok(0);
            }
        };
        let term = lead.fence()? as i32;
        match lockhost::campaign(name, "v3", 10_000, 20)? {
            Some(_) => log::info("campaign again: led"),
            None => log::info("campaign again: timed out"),
        }
        lead.proclaim("v2")?;
        log::info("proclaim: ok");
        let mut buf = [0u8; 512];
        let n = lockhost::leader_into(name, &mut buf)?;
        log::info(&format!("leader {}", String::from_utf8_lossy(&buf[..n.min(buf.len())])));
        lead.resign()?;
        log::info("resign: ok");
        log::info(&format!("leader {}", lockhost::leader(name, 0)?));
        match lockhost::try_lock_fair(name, 1_000, 0)? {
            Some(lock) => {
                log::info("fair: held");
                lock.release()?;
            }
            None => log::info("fair: contended"),
        }
        Ok(term)
    };
    run().unwrap_or_else(|e| {
        log::warn(&format!("elect failed: {}", e));
        -e.code()
    })
}

/// Sends the request `head` ("METHOD URL" then "Name: value" lines) with `body`, under the lock
/// `key`'s fence when `key` is not empty (-1000 when another holds it), reading the response into
/// a buffer of `cap` bytes, then whole through the kept reply when it is longer. Logs "http
/// <status> content-type=<value> body=<body> (<len> bytes, read <first|again>)" and returns the
/// status, or logs "http failed: <error>: <last_error>" and returns -code.
#[no_mangle]
pub extern "C" fn request(head_ptr: *const u8, head_len: usize, body_ptr: *const u8, body_len: usize, key_ptr: *const u8, key_len: usize, cap: i32) -> i32 {
    let (head, body, key) = unsafe { (str_arg(head_ptr, head_len), str_arg(body_ptr, body_len), str_arg(key_ptr, key_len)) };
    let run = || -> Result<i32, lockhost::Error> {
        let lock = if key.is_empty() {
            None
        } else {
            match lockhost::try_lock(key, 10_000)? {
                Some(lock) => Some(lock),
                None => return Ok(-1000),
            }
        };
        let mut buf = vec![0u8; cap as usize];
        let n = lockhost::http_request(head, body.as_bytes(), lock.as_ref(), &mut buf)?;
        let fits = n <= buf.len();
        let response = if fits { buf[..n].to_vec() } else { lockhost::reply_vec(n as i32)? };
        let status = lockhost::http_status(&response).map_or(-1, i32::from);
        log::info(&format!(
            "http {} content-type={} body={} ({} bytes, read {})",
            status,
            lockhost::http_header(&response, "content-type").unwrap_or("none"),
            String::from_utf8_lossy(lockhost::http_body(&response)),
            n,
            if fits { "first" } else { "again" }
        ));
        Ok(status)
    };
    run().unwrap_or_else(|e| {
        log::warn(&format!("http failed: {}: {}", e, lockhost::last_error()));
        -e.code()
    })
}

/// Sends the request `head` with `body` under the fence of the scheduled call's lock (handle 0):
/// logs "scheduled <status>" and returns the status, or logs "scheduled failed: <error>" and
/// returns -code.
#[no_mangle]
pub extern "C" fn scheduledRequest(head_ptr: *const u8, head_len: usize, body_ptr: *const u8, body_len: usize) -> i32 {
    let (head, body) = unsafe { (str_arg(head_ptr, head_len), str_arg(body_ptr, body_len)) };
    let mut buf = [0u8; 512];
    match lockhost::http_request_schedule_fenced(head, body.as_bytes(), &mut buf) {
        Ok(n) => {
            let status = lockhost::http_status(&buf[..n.min(buf.len())]).map_or(-1, i32::from);
            log::info(&format!("scheduled {}", status));
            status
        }
        Err(e) => {
            log::warn(&format!("scheduled failed: {}", e));
            -e.code()
        }
    }
}
