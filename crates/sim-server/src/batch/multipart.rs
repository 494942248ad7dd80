//! Just enough `multipart/form-data` for `POST /v1/files`: the parts of one body, each with
//! its field name, file name and bytes. Anything malformed is refused with a reason.

/// One part of the form.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Part {
    pub name: String,
    pub filename: Option<String>,
    pub data: Vec<u8>,
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() || from > hay.len() - needle.len() {
        return None;
    }
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// The boundary named by a `multipart/form-data` content type.
pub(crate) fn boundary(content_type: &str) -> Result<String, String> {
    let mut params = content_type.split(';');
    let kind = params.next().unwrap_or("").trim();
    if !kind.eq_ignore_ascii_case("multipart/form-data") {
        return Err(format!("expected a multipart/form-data body, not {kind:?}"));
    }
    params
        .filter_map(|p| p.trim().split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("boundary"))
        .map(|(_, v)| v.trim().trim_matches('"').to_owned())
        .filter(|b| !b.is_empty() && b.len() <= 70)
        .ok_or_else(|| "the multipart content type has no valid boundary".to_owned())
}

/// `name="x"` from a `Content-Disposition` header's value.
fn param(header: &str, key: &str) -> Option<String> {
    header.split(';').find_map(|p| {
        let (k, v) = p.trim().split_once('=')?;
        (k.trim().eq_ignore_ascii_case(key)).then(|| v.trim().trim_matches('"').to_owned())
    })
}

/// The parts of `body`, delimited by `boundary`.
pub(crate) fn parse(boundary: &str, body: &[u8]) -> Result<Vec<Part>, String> {
    let delim = format!("--{boundary}");
    let mut at = find(body, delim.as_bytes(), 0).ok_or("no multipart boundary in the body")?;
    let mut parts = Vec::new();
    loop {
        at += delim.len();
        if body[at..].starts_with(b"--") {
            return Ok(parts);
        }
        if !body[at..].starts_with(b"\r\n") {
            return Err("malformed multipart body (no line end after a boundary)".into());
        }
        at += 2;
        let head_end = find(body, b"\r\n\r\n", at).ok_or("a multipart part has no header end")?;
        let head = std::str::from_utf8(&body[at..head_end])
            .map_err(|_| "a multipart header is not UTF-8")?;
        let disposition = head
            .split("\r\n")
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-disposition"))
            .map(|(_, v)| v.to_owned())
            .ok_or("a multipart part has no Content-Disposition")?;
        let name = param(&disposition, "name").ok_or("a multipart part has no name")?;
        let data_start = head_end + 4;
        let closing = format!("\r\n{delim}");
        let data_end = find(body, closing.as_bytes(), data_start)
            .ok_or("a multipart part is not closed by the boundary")?;
        parts.push(Part {
            name,
            filename: param(&disposition, "filename"),
            data: body[data_start..data_end].to_vec(),
        });
        at = data_end + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_with_a_field_and_a_file_parses() {
        let body = b"--xyz\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.jsonl\"\r\nContent-Type: application/jsonl\r\n\r\n{\"a\":1}\n\r\n--xyz--\r\n";
        let b = boundary("multipart/form-data; boundary=xyz").expect("boundary");
        let parts = parse(&b, body).expect("parts");
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].name, "purpose");
        assert_eq!(parts[0].data, b"batch");
        assert_eq!(parts[1].filename.as_deref(), Some("a.jsonl"));
        assert_eq!(parts[1].data, b"{\"a\":1}\n");
    }

    #[test]
    fn malformed_forms_are_refused() {
        assert!(boundary("application/json").is_err());
        assert!(boundary("multipart/form-data").is_err());
        assert!(parse("xyz", b"no boundary here").is_err());
        assert!(
            parse(
                "xyz",
                b"--xyz\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nnever closed"
            )
            .is_err()
        );
        assert!(parse("xyz", b"--xyz\r\nX: y\r\n\r\nv\r\n--xyz--").is_err());
    }
}
