import CLibUV

// libuv's callbacks for a `TCPSocket`, its requests and its writes: C function pointers, so
// they capture nothing and find their Swift object through the handle's or request's `data`.
// Each runs on the loop thread, inside libuv.

let tcpConnectionCallback: uv_connection_cb = { server, status in
    UVHandle.owner(TCPSocket.self, of: server!.pointee.data)?.connectionArrived(status: status)
}

let tcpConnectCallback: uv_connect_cb = { request, status in
    // Unretained: the task awaiting the connect holds the socket until this callback resumes
    // it, and libuv always calls it (ECANCELED once the socket is closed).
    let owner = Unmanaged<TCPSocket>.fromOpaque(request!.pointee.data).takeUnretainedValue()
    owner.connected(status: status, request: request!)
}

let tcpAllocCallback: uv_alloc_cb = { handle, _, buffer in
    // libuv allocates only for a reading socket, which is open, so `data` is set.
    let owner = UVHandle.owner(TCPSocket.self, of: handle!.pointee.data)!
    if let memory = owner.allocate() {
        buffer!.pointee = uv_buf_init(memory.assumingMemoryBound(to: CChar.self), UInt32(TCPSocket.readBufferSize))
    } else {
        buffer!.pointee = uv_buf_init(nil, 0)
    }
}

let tcpReadCallback: uv_read_cb = { stream, count, _ in
    UVHandle.owner(TCPSocket.self, of: stream!.pointee.data)?.received(count: count)
}

let tcpWriteCallback: uv_write_cb = { request, status in
    // Unretained: the socket keeps the write in `writes` until this callback (and the write
    // holds its socket).
    let write = Unmanaged<TCPWrite>.fromOpaque(request!.pointee.data).takeUnretainedValue()
    write.socket.written(write, status: status)
}

let tcpShutdownCallback: uv_shutdown_cb = { request, status in
    // Unretained: the task awaiting shutdownWriting() holds the socket until this callback
    // resumes it, and libuv always calls it (ECANCELED once the socket is closed).
    let owner = Unmanaged<TCPSocket>.fromOpaque(request!.pointee.data).takeUnretainedValue()
    request!.deallocate()
    owner.shutDown(status: status)
}
