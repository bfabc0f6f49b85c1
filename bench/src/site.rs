//! A generated web site (pages of 5–20 KB under many host names) in a document root, served
//! by a private nginx (Debian `nginx-light`, `daemon off`, its own config, loopback port, no
//! access log), stopped at the end.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

/// The pages of a generated site.
pub struct Site {
    /// `(host, path)` of every page, page i on host i mod hosts.
    pub pages: Vec<(String, String)>,
    /// Their bytes in all.
    pub bytes: u64,
    pub hosts: usize,
}

impl Site {
    /// The pages' URLs on `port`.
    pub fn urls(&self, port: u16) -> Vec<String> {
        self.pages
            .iter()
            .map(|(host, path)| format!("http://{host}:{port}{path}"))
            .collect()
    }
}

/// Writes the document root `dir/www/<host>/p<i>.html`: `pages` pages of 5–20 KB
/// (deterministic sizes and content), page i on host i mod `hosts`.
pub fn make_site(dir: &Path, pages: usize, hosts: usize) -> anyhow::Result<Site> {
    if hosts == 0 || pages < hosts {
        bail!("need at least one page per host");
    }
    let www = dir.join("www");
    let mut out = Vec::with_capacity(pages);
    let mut total = 0u64;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for h in 0..hosts {
        std::fs::create_dir_all(www.join(host_name(h)))?;
    }
    for i in 0..pages {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let size = 5_000 + (x % 15_001) as usize;
        let host = host_name(i % hosts);
        let path = format!("/p{i}.html");
        let mut body =
            format!("<!DOCTYPE html><html><head><title>{host}{path}</title></head><body><p>")
                .into_bytes();
        body.resize(size - 19, b'a' + (i % 26) as u8);
        body.extend_from_slice(b"</p></body></html>\n");
        std::fs::write(www.join(&host).join(&path[1..]), &body)?;
        total += body.len() as u64;
        out.push((host, path));
    }
    // nginx's workers may run as another user: everything readable.
    chmod_tree(dir)?;
    Ok(Site {
        pages: out,
        bytes: total,
        hosts,
    })
}

fn chmod_tree(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            chmod_tree(&entry.path())?;
        }
    }
    Ok(())
}

pub fn host_name(h: usize) -> String {
    format!("h{h}.bench.test")
}

/// The default nginx binary (Debian package nginx-light).
pub fn default_nginx() -> PathBuf {
    PathBuf::from("/usr/sbin/nginx")
}

/// A private nginx, not daemonised, stopped (and waited for) on drop.
pub struct Nginx {
    child: Child,
    pub port: u16,
}

impl Nginx {
    /// Serves `dir/www/$host` on a free loopback port; its own files go in `dir`.
    pub fn start(binary: &Path, dir: &Path) -> anyhow::Result<Nginx> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        for sub in ["tmp", "logs"] {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        let d = dir.display();
        let conf = format!(
            "daemon off;\nworker_processes 2;\npid {d}/nginx.pid;\nerror_log {d}/logs/error.log warn;\n\
             events {{ worker_connections 8192; }}\n\
             http {{\n  access_log off;\n  log_not_found off;\n  sendfile on;\n  tcp_nopush on;\n\
               keepalive_requests 1000000;\n  keepalive_timeout 60s;\n\
               types {{ text/html html; text/plain txt; }}\n  default_type application/octet-stream;\n\
               client_body_temp_path {d}/tmp/body;\n  proxy_temp_path {d}/tmp/proxy;\n\
               fastcgi_temp_path {d}/tmp/fastcgi;\n  uwsgi_temp_path {d}/tmp/uwsgi;\n\
               scgi_temp_path {d}/tmp/scgi;\n\
               server {{\n    listen 127.0.0.1:{port} default_server;\n    server_name _;\n\
                 root {d}/www/$host;\n  }}\n}}\n"
        );
        let conf_path = dir.join("nginx.conf");
        std::fs::write(&conf_path, conf)?;
        let child = Command::new(binary)
            .arg("-p")
            .arg(dir)
            .arg("-e")
            .arg(dir.join("logs/error.log"))
            .arg("-c")
            .arg(&conf_path)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| {
                format!("starting {} (Debian package nginx-light)", binary.display())
            })?;
        let mut nginx = Nginx { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = nginx.child.try_wait()? {
                bail!("nginx exited at start ({status}); see {d}/logs/error.log");
            }
            if Instant::now() > deadline {
                bail!("nginx does not listen on {port} after 10 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(nginx)
    }

    pub fn stop(mut self) -> anyhow::Result<()> {
        self.terminate()
    }

    fn terminate(&mut self) -> anyhow::Result<()> {
        if self.child.try_wait()?.is_none() {
            let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
            // QUIT: graceful stop of the master and its workers.
            nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGQUIT)?;
            self.child.wait()?;
        }
        Ok(())
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        if self.terminate().is_err() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
