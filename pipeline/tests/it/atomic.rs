//! Writing outputs: folders are created, errors name the user's file and never the internal temporary file.

use aerie_pipeline::io::atomic::write_atomic;

#[test]
fn outputs_go_into_new_folders() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new/deeper/scan.txt");
    write_atomic(&path, |f| {
        use std::io::Write;
        f.write_all(b"hello")
            .map_err(|e| aerie_pipeline::Error::io(&path, e))
    })
    .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"hello");
}

#[test]
fn errors_name_the_users_file_not_the_temporary_one() {
    let dir = tempfile::tempdir().unwrap();
    // A file where a folder should be: the folder cannot be created.
    let blocker = dir.path().join("blocker");
    std::fs::write(&blocker, b"x").unwrap();
    let path = blocker.join("scan.pcd");
    let err = write_atomic(&path, |_| Ok(())).unwrap_err().to_string();
    assert!(err.contains("scan.pcd"), "{err}");
    assert!(!err.contains("aerie-tmp"), "{err}");
}
