class FilesController < ApplicationController
  def show
    # ruleid: aster.ruby.path-traversal
    send_file "/srv/files/#{params[:name]}"
  end

  def raw
    name = params[:name]
    # ruleid: aster.ruby.path-traversal
    render plain: File.read(File.join("/srv/files", name))
  end
end
