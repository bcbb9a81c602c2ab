//! The `status` verb's side of the HTTP port: one GET with the same client crate the webhooks
//! use (reqwest), with the bearer token when the config has one.

use std::time::Duration;

/// GETs `path` from the daemon at `addr` (`host:port`): the status code and the body.
pub fn get(addr: &str, path: &str, token: Option<&str>) -> anyhow::Result<(u16, String)> {
    let url = format!("http://{addr}{path}");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .connect_timeout(Duration::from_secs(3))
            .build()?;
        let mut request = client.get(&url);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await?;
        let status = response.status().as_u16();
        Ok((status, response.text().await?))
    })
}
